// Command fakeexec stands in for tapebox-exec in the sandbox tests: "fakeexec serve" echoes
// each stdin line to stdout ("fakeexec serve --listen unix:PATH" echoes the lines of the
// first connection to a unix socket at PATH instead, like tapebox-exec), "fakeexec arch"
// prints GOARCH.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
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
		if len(os.Args) > 2 && os.Getenv("FAKEEXEC_OLD") == "1" { // an executor before --listen
			fmt.Fprintf(os.Stderr, "tapebox-exec serve: unknown flag %q\n", os.Args[2])
			os.Exit(2)
		}
		if len(os.Args) == 4 && os.Args[2] == "--listen" && strings.HasPrefix(os.Args[3], "unix:") {
			listen(strings.TrimPrefix(os.Args[3], "unix:"))
			return
		}
		echo(os.Stdin, os.Stdout)
		fmt.Fprintln(os.Stderr, "fakeexec: stdin closed")
	default:
		fmt.Fprintf(os.Stderr, "fakeexec: unknown verb %q\n", os.Args[1])
		os.Exit(2)
	}
}

func echo(r io.Reader, w io.Writer) {
	in := bufio.NewReader(r)
	out := bufio.NewWriter(w)
	for {
		line, err := in.ReadBytes('\n')
		out.Write(line)
		if in.Buffered() == 0 {
			out.Flush()
		}
		if err != nil {
			out.Flush()
			return
		}
	}
}

func listen(path string) {
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeexec:", err)
		os.Exit(1)
	}
	os.Chmod(path, 0o666)
	fmt.Printf("listening unix:%s\n", path)
	go func() {
		io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "fakeexec: stdin closed")
		os.Exit(0)
	}()
	c, err := ln.Accept()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeexec:", err)
		os.Exit(1)
	}
	ln.Close()
	echo(c, c)
	fmt.Fprintln(os.Stderr, "fakeexec: connection closed")
}
