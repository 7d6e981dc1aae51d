// Command agentrt runs LLM agents: one-shot turns, durable sessions, human
// approvals and replays. See README.md.
package main

import (
	"os"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, app.Options{}))
}
