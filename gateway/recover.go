package gateway

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt"
)

// resumeStopped resumes, in this process, the runs whose process stopped
// mid-run (Runner.Recover): among them the turns of a gateway that died
// after its agent run's first commit. That commit marked the turn's
// inputs answered, so no pending input brings the turn back: without
// this, its answer would wait for the source's next input (see
// notStarted) or for agentrt recover. Recover takes each such session
// by its lease, so across gateways starting at once each run goes on
// exactly once, where it stopped (a tool call whose result was stored
// does not run again). The runs go on in the background, the runner's
// (Runner.Close stops them). A store without leases cannot tell a
// crashed run from one running elsewhere: nothing is resumed.
func (g *Gateway) resumeStopped(ctx context.Context) {
	if _, err := g.r.Recover(ctx); err != nil && ctx.Err() == nil &&
		agentrt.AsError(err).ErrorCode() != agentrt.CodeNoLeases {
		g.report("", fmt.Errorf("resume the runs whose process stopped: %w", err))
	}
}
