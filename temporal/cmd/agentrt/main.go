// Command agentrt is agentrt with the Temporal engine: everything the
// main module's agentrt does, plus engine: temporal in agentrt.yaml (runs
// on a Temporal cluster's workers) and agentrt worker. See
// docs/temporal.md.
package main

import (
	"os"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/temporal/internal/glue"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, glue.Options(app.Options{})))
}
