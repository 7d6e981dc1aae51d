// Command agentrt runs LLM agents: one-shot turns, durable sessions, human
// approvals and replays. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrt/agentrt/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
