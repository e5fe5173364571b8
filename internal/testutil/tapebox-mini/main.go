// Command tapebox-mini runs the small real agent of package testkit/miniagent as a program:
// the prompt is its arguments, the working directory its own, the provider the Anthropic
// base URL in ANTHROPIC_BASE_URL (as tapebox record and tapebox fork set it). Tests build it
// statically to run an agent where no Node.js is, such as in a fresh container.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

func main() {
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tapebox-mini:", err)
		os.Exit(1)
	}
	answer, err := miniagent.Run(context.Background(), miniagent.Config{BaseURL: os.Getenv("ANTHROPIC_BASE_URL"),
		Provider: tape.ProviderAnthropic, Prompt: strings.Join(os.Args[1:], " "), Dir: dir, APIKey: "placeholder"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tapebox-mini:", err)
		os.Exit(1)
	}
	fmt.Println(answer)
}
