// Command fakeexec stands in for tapebox-exec in the sandbox tests: "fakeexec serve" echoes
// each stdin line to stdout ("fakeexec serve --dial unix:PATH" connects to a unix socket at
// PATH and echoes the lines of that connection instead, like tapebox-exec; FAKEEXEC_DIAL_DELAY
// waits before it dials, FAKEEXEC_DIAL_TO dials another path), "fakeexec arch" prints GOARCH,
// "fakeexec impostor DIR" connects to every socket that shows up in DIR and says "impostor".
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeexec serve|arch")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "arch":
		fmt.Println(runtime.GOARCH)
	case "impostor":
		impostor(os.Args[2])
	case "serve":
		if len(os.Args) > 2 && os.Getenv("FAKEEXEC_OLD") == "1" { // an executor before --dial
			fmt.Fprintf(os.Stderr, "tapebox-exec serve: unknown flag %q\n", os.Args[2])
			os.Exit(2)
		}
		if len(os.Args) == 4 && os.Args[2] == "--dial" && strings.HasPrefix(os.Args[3], "unix:") {
			dial(strings.TrimPrefix(os.Args[3], "unix:"))
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

func dial(path string) {
	if d, err := time.ParseDuration(os.Getenv("FAKEEXEC_DIAL_DELAY")); err == nil {
		time.Sleep(d)
	}
	if p := os.Getenv("FAKEEXEC_DIAL_TO"); p != "" {
		path = p
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tapebox-exec serve: dial unix:%s: %v\n", path, err)
		os.Exit(1)
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "fakeexec: stdin closed")
		os.Exit(0)
	}()
	echo(c, c)
	fmt.Fprintln(os.Stderr, "fakeexec: connection closed")
}

func impostor(dir string) {
	seen := map[string]bool{}
	var held []net.Conn
	for {
		socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
		for _, p := range socks {
			if seen[p] {
				continue
			}
			seen[p] = true
			if c, err := net.Dial("unix", p); err == nil {
				c.Write([]byte("impostor\n"))
				held = append(held, c)
				fmt.Println("impostor: connected to", p)
			}
		}
		time.Sleep(time.Millisecond)
	}
}
