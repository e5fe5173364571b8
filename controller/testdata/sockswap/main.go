// Command sockswap plays a hostile process in a sandbox for the controller's tests:
// "sockswap DIR TARGET" watches DIR with inotify and, for every unix socket that appears in
// it (once its mode is set: its owner's chmod is the signal), at once tries to replace it with a symbolic link to TARGET (a path on the host: a
// controller that dials the socket by path would follow it there), and then to connect to it
// and pose as an executor with a hello reply. It logs each attempt on stdout and runs until
// it is killed.
package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sockswap DIR TARGET")
		os.Exit(2)
	}
	dir, target := os.Args[1], os.Args[2]
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		fmt.Println("inotify:", err)
		os.Exit(1)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_ATTRIB|syscall.IN_MOVED_TO); err != nil {
		fmt.Println("watch:", err)
		os.Exit(1)
	}
	fmt.Println("watching", dir)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		attack(filepath.Join(dir, e.Name()), target)
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if err != nil {
			fmt.Println("read:", err)
			os.Exit(1)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			attack(filepath.Join(dir, name), target)
		}
	}
}

// held keeps the connections open.
var held []net.Conn

func attack(path, target string) {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return
	}
	tmp := path + ".swap"
	err := os.Symlink(target, tmp)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		fmt.Println("swapped", path)
		return
	}
	fmt.Println("swap failed:", err)
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("connect failed:", err)
		return
	}
	_, err = c.Write([]byte(`{"op":"hello","ok":true,"protocol":1,"version":"sockswap"}` + "\n"))
	fmt.Println("connected as an executor:", err)
	held = append(held, c) // open, so that a controller that took it would wait on it
}
