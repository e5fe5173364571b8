// Command fakeexec stands in for tapebox-exec in the sandbox tests until the real executor
// is built: "fakeexec serve" echoes each stdin line to stdout, "fakeexec arch" prints GOARCH.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeexec serve|arch")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "arch":
		fmt.Println(runtime.GOARCH)
	case "serve":
		in := bufio.NewReader(os.Stdin)
		out := bufio.NewWriter(os.Stdout)
		for {
			line, err := in.ReadBytes('\n')
			out.Write(line)
			if in.Buffered() == 0 {
				out.Flush()
			}
			if err != nil {
				out.Flush()
				fmt.Fprintln(os.Stderr, "fakeexec: stdin closed")
				return
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "fakeexec: unknown verb %q\n", os.Args[1])
		os.Exit(2)
	}
}
