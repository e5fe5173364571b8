// Command tapebox records agent runs as tapes, replays them in sandboxes and exports them
// as datasets. See package cli for the verbs.
package main

import (
	"context"
	"os"

	"github.com/tapebox/tapebox/cli"
)

func main() {
	ctx, stop := cli.Interrupts(context.Background(), os.Stderr, os.Exit)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
