package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Interrupts returns a context that stops the verb run with it, for cmd/tapebox:
//
//   - the first SIGINT (Ctrl-C) or SIGTERM prints "stopping…" on stderr at once and cancels
//     the context: the verb ends its sandbox (a container is removed, a local sandbox's
//     processes killed) and returns;
//   - a second SIGINT or SIGTERM calls exit(128+signal) at once, leaving what is left to a
//     later run's reaper;
//   - a SIGPIPE from a broken stdout or stderr (the reader went away, as head does in
//     "tapebox replay --check 2>&1 | head -30") cancels the context like SIGINT, instead
//     of killing the process before it cleans up. A SIGPIPE from any other pipe (an
//     executor's stdin) is left to the write that caused it, which fails with EPIPE.
//
// stop releases the signals; call it when the verb returned.
func Interrupts(ctx context.Context, stderr io.Writer, exit func(code int)) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		stopping := false
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if sig == syscall.SIGPIPE {
					if stopping || !brokenOutput() {
						continue
					}
					stopping = true
					cancel()
					continue
				}
				if stopping {
					exit(128 + int(sig.(syscall.Signal)))
					return
				}
				stopping = true
				if sig == os.Interrupt {
					fmt.Fprintln(stderr, "tapebox: stopping… (Ctrl-C again stops at once)")
				} else {
					fmt.Fprintf(stderr, "tapebox: stopping… (%v)\n", sig)
				}
				cancel()
			}
		}
	})
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
		cancel()
	}
}

// brokenOutput says whether stdout or stderr is a pipe whose reader went away (poll reports
// POLLERR on the write end of such a pipe).
func brokenOutput() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if n, err := unix.Poll(fds, 0); err != nil || n == 0 {
		return false
	}
	for _, f := range fds {
		if f.Revents&unix.POLLERR != 0 {
			return true
		}
	}
	return false
}
