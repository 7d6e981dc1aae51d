// Package builtin provides tools every agent can use: a calculator, a
// clock, and ask_user (the model asks the user; see AskUser). Both are pure Go, deterministic given their inputs and clock,
// and safe for concurrent use.
//
//	reg, err := tool.NewRegistry(builtin.All(nil)...)
package builtin

import (
	"time"

	"github.com/agentrt/agentrt/tool"
)

// All returns every built-in tool. now is the clock's time source; nil
// means time.Now.
func All(now func() time.Time) []tool.Tool {
	return []tool.Tool{Calculator(), Clock(now), AskUser()}
}
