package agentrt

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// check reports what makes l unusable.
func (l Limits) check() error {
	switch {
	case l.MaxRounds < 0:
		return fmt.Errorf("limits: max_rounds is negative (%d)", l.MaxRounds)
	case l.MaxSteps < 0:
		return fmt.Errorf("limits: max_steps is negative (%d)", l.MaxSteps)
	case l.MaxTokens < 0:
		return fmt.Errorf("limits: max_tokens is negative (%d)", l.MaxTokens)
	case l.MaxCostUSD < 0:
		return fmt.Errorf("limits: max_cost_usd is negative (%g)", l.MaxCostUSD)
	case l.SessionMaxTokens < 0:
		return fmt.Errorf("limits: session_max_tokens is negative (%d)", l.SessionMaxTokens)
	case l.SessionMaxCostUSD < 0:
		return fmt.Errorf("limits: session_max_cost_usd is negative (%g)", l.SessionMaxCostUSD)
	case l.MaxTurnDuration < 0:
		return fmt.Errorf("limits: max_turn_duration is negative (%s)", l.MaxTurnDuration)
	}
	return nil
}

// overBudget reports the limit the instruction would cross, as the error
// code (the limit's key) and a message in words; "" when none. What the
// turn used is counted from its start or its last resume after a pause
// (State.StepBase, UsageBase, RunSince), so a resume grants the turn
// limits again; the session's limits count the session's whole usage.
//
// A limit a single step would cross on its own (a batch of tool calls
// larger than max_steps, a first request larger than max_tokens) does not
// stop the first step of a turn or of a resume: it would pause forever.
func (x *Exec) overBudget(ins Instruction) (code, msg string) {
	l, st := x.agent.Limits, x.st
	if l.MaxTurnDuration > 0 && !st.RunSince.IsZero() {
		if took := x.now().Sub(st.RunSince); took >= l.MaxTurnDuration {
			return CodeMaxTurnDuration, fmt.Sprintf("the turn has run for %s; limits.max_turn_duration is %s. Resume the session to give it another %s, or raise the limit",
				roundDuration(took), l.MaxTurnDuration, l.MaxTurnDuration)
		}
	}
	switch ins.Kind {
	case KindCallTools:
		steps := st.Steps - st.StepBase
		if n := len(ins.Calls); l.MaxSteps > 0 && steps > 0 && steps+n > l.MaxSteps {
			return CodeMaxSteps, fmt.Sprintf("the turn has run %d tool calls and the model asks for %d more; limits.max_steps is %d. Resume the session to allow %d more, or raise the limit",
				steps, n, l.MaxSteps, l.MaxSteps)
		}
	case KindCallModel:
		if l.MaxTokens == 0 && l.MaxCostUSD == 0 && l.SessionMaxTokens == 0 && l.SessionMaxCostUSD == 0 {
			return "", ""
		}
		est := estimateTokens(st)
		var estCost float64
		if p, ok := model.PriceOf(x.sessionModel()); ok {
			estCost = p.Cost(model.Usage{InputTokens: est})
		}
		turn := st.RunUsage
		turn.InputTokens -= st.UsageBase.InputTokens
		turn.OutputTokens -= st.UsageBase.OutputTokens
		turn.CostUSD -= st.UsageBase.CostUSD
		used := turn.InputTokens + turn.OutputTokens
		first := used == 0
		switch {
		case l.MaxTokens > 0 && (used >= l.MaxTokens || !first && used+est > l.MaxTokens):
			return CodeMaxTokens, fmt.Sprintf("the turn has used %d tokens and the next request is about %d more; limits.max_tokens is %d. Resume the session to allow %d more, or raise the limit",
				used, est, l.MaxTokens, l.MaxTokens)
		case l.MaxCostUSD > 0 && (turn.CostUSD >= l.MaxCostUSD || !first && turn.CostUSD+estCost > l.MaxCostUSD):
			return CodeMaxCostUSD, fmt.Sprintf("the turn has cost $%.4f%s; limits.max_cost_usd is $%.4f. Resume the session to allow as much again, or raise the limit",
				turn.CostUSD, more(estCost), l.MaxCostUSD)
		}
		total := st.Usage.InputTokens + st.Usage.OutputTokens
		switch {
		case l.SessionMaxTokens > 0 && total+est > l.SessionMaxTokens:
			return CodeSessionMaxTokens, fmt.Sprintf("the session has used %d tokens and the next request is about %d more; limits.session_max_tokens is %d. Raise the limit, then resume the session",
				total, est, l.SessionMaxTokens)
		case l.SessionMaxCostUSD > 0 && (st.Usage.CostUSD >= l.SessionMaxCostUSD || st.Usage.CostUSD+estCost > l.SessionMaxCostUSD):
			return CodeSessionMaxCostUSD, fmt.Sprintf("the session has cost $%.4f%s; limits.session_max_cost_usd is $%.4f. Raise the limit, then resume the session",
				st.Usage.CostUSD, more(estCost), l.SessionMaxCostUSD)
		}
	}
	return "", ""
}

// more says what the next request is estimated to cost, when the model's
// price is known.
func more(cost float64) string {
	if cost == 0 {
		return ""
	}
	return fmt.Sprintf(" and the next request about $%.4f more", cost)
}

// estimateTokens estimates the input tokens of the conversation's next
// request (see estimateMessages: a tokenizer would be exact; this bounds
// the cost of the check).
func estimateTokens(st *State) int64 { return int64(estimateMessages(st.Messages)) }

// pauseOverBudget pauses the run when ins would cross a limit: an error
// event that says which and why, then run_finished paused with the
// limit's key as the reason. It reports whether it did.
func (x *Exec) pauseOverBudget(ins Instruction) bool {
	code, msg := x.overBudget(ins)
	if code == "" {
		return false
	}
	emit(x, session.Error{Code: code, Message: msg, Recoverable: true})
	x.End(session.StatusPaused, code)
	if err := x.hooks.agentEnd(context.Background(), x.info(), session.StatusPaused, code); err != nil {
		emit(x, session.Error{Code: CodeHookPanic, Message: AsError(err).Error()})
	}
	return true
}

// roundDuration rounds d for people: to the millisecond, unless it is
// shorter.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d
	}
	return d.Round(time.Millisecond)
}
