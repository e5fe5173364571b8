// Command tapebox-exec is the executor that runs inside the sandbox: it performs tool
// calls the way a harness would and formats their results likewise. See package
// executor/cli for its commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tapebox/tapebox/executor/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
