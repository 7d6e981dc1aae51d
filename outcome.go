package agentrt

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/session"
)

// Exit codes of an Outcome: what the agentrt command exits with after a
// run, and what a program that wraps runs in a process may exit with too.
// (The command's own bad-usage code, 2, is no outcome of a run.)
const (
	ExitDone    = 0 // the run finished with an answer
	ExitFailed  = 1 // the run failed, was canceled or was interrupted
	ExitWaiting = 3 // the run waits for a person (Next says how to answer)
	ExitPaused  = 4 // the run paused at a limit (Next says how to go on)
	// ExitInterrupted is 128+SIGINT, as shells report a command stopped by
	// Ctrl-C: the run was canceled with ErrSignalInterrupt.
	ExitInterrupted = 130
)

// ErrSignalInterrupt is the cause a program gives when it cancels a run's
// context because a person pressed Ctrl-C (context.WithCancelCause): the
// run ends canceled, resumable, with CodeSignalInterrupt as its reason, and
// DescribeOutcome gives it ExitInterrupted rather than ExitFailed.
var ErrSignalInterrupt error = &Error{Kind: FailCanceled, Code: CodeSignalInterrupt, Msg: "the run was stopped by an interrupt (Ctrl-C)"}

// Outcome is how a run ended, in words for people and with what can be done
// next: the same for the CLI, which prints Summary and each step's Command
// and exits with ExitCode, and for a server, which can render the steps as
// requests of its own.
type Outcome struct {
	ExitCode int
	// Summary says how the run ended, in one sentence without a final
	// period: "session s1 is waiting for a person".
	Summary string
	// Next are the ways to go on, in order: one per pending request of a
	// waiting run, a resume for a run that stopped early, the next turn
	// for one that is done.
	Next []NextStep
}

// NextKind is what a NextStep does.
type NextKind string

// Kinds of NextStep.
const (
	// NextResolve approves or rejects a tool call (an approval request).
	NextResolve NextKind = "resolve"
	// NextRespond answers a prompt, a selection or a confirmation.
	NextRespond NextKind = "respond"
	// NextResume continues a run that stopped before its end: paused at a
	// limit, failed, canceled or interrupted.
	NextResume NextKind = "resume"
	// NextContinue sends the session's next turn.
	NextContinue NextKind = "continue"
	// NextCancel stops the session's run, wherever it runs.
	NextCancel NextKind = "cancel"
	// NextRevoke ends a standing decision (RuleID): the session's own, or
	// with Agent set, that agent's.
	NextRevoke NextKind = "revoke"
)

// NextStep is one way to go on with a session, as data.
type NextStep struct {
	Kind      NextKind `json:"kind"`
	SessionID string   `json:"session_id"`
	// RequestID, RequestKind, Question, Options and Multi describe the
	// request a resolve or respond step answers.
	RequestID   string              `json:"request_id,omitempty"`
	RequestKind session.RequestKind `json:"request_kind,omitempty"`
	Question    string              `json:"question,omitempty"`
	Options     []string            `json:"options,omitempty"`
	Multi       bool                `json:"multi,omitempty"`
	// RuleID and Agent name the standing decision a revoke step ends
	// (Agent: one of the agent's, not the session's own).
	RuleID string `json:"rule_id,omitempty"`
	Agent  string `json:"agent,omitempty"`
}

// CLIFlags are the agentrt command's global flags that a follow-up command
// must repeat to reach the same sessions; empty ones are left out.
type CLIFlags struct {
	Config string // --config
	Store  string // --store
	Tenant string // --tenant
}

// Prefix is how every agentrt command line with the flags f begins:
// "agentrt", then the flags that are set, quoted for a POSIX shell where
// they need to be.
func (f CLIFlags) Prefix() string {
	var b strings.Builder
	b.WriteString("agentrt")
	for _, fl := range []struct{ name, value string }{{"--config", f.Config}, {"--store", f.Store}, {"--tenant", f.Tenant}} {
		if fl.value != "" {
			b.WriteString(" " + fl.name + " " + shellQuote(fl.value))
		}
	}
	return b.String()
}

// Command renders the step as an agentrt command line, with the global
// flags f right after "agentrt" and every value quoted for a POSIX shell
// where it needs to be. Upper-case words are for the person to fill in:
// TEXT, CHOICE, JSON, R.
func (n NextStep) Command(f CLIFlags) string {
	var b strings.Builder
	b.WriteString(f.Prefix())
	id, rid := shellQuote(n.SessionID), shellQuote(n.RequestID)
	switch n.Kind {
	case NextContinue:
		fmt.Fprintf(&b, " run --session %s TEXT", id)
	case NextResume:
		fmt.Fprintf(&b, " resume %s", id)
	case NextCancel:
		fmt.Fprintf(&b, " cancel %s", id)
	case NextRevoke:
		if n.Agent != "" {
			fmt.Fprintf(&b, " rules revoke --agent %s %s", shellQuote(n.Agent), shellQuote(n.RuleID))
		} else {
			fmt.Fprintf(&b, " rules revoke %s %s", id, shellQuote(n.RuleID))
		}
	case NextResolve:
		fmt.Fprintf(&b, " approve %s %s", id, rid)
	case NextRespond:
		fmt.Fprintf(&b, " respond %s %s", id, rid)
		switch {
		case n.RequestKind == session.RequestConfirm:
			b.WriteString(" --done [--result JSON] | --failed [--reason R] | --retry")
		case n.RequestKind == session.RequestSelect && n.Multi:
			b.WriteString(" --select CHOICE,CHOICE...")
		case n.RequestKind == session.RequestSelect:
			b.WriteString(" --select CHOICE")
		default:
			b.WriteString(" TEXT")
		}
	}
	return b.String()
}

// DescribeOutcome says how the run summarised by res ended and what can be
// done next; pending are the session's pending requests when it waits for a
// person (State.Requests, or RunError.Requests), one NextStep each. res
// must not be nil; its SessionID names the session.
//
//   - done: ExitDone; Next sends the next turn.
//   - waiting: ExitWaiting; Next answers each pending request (resolve for
//     an approval, respond for the others).
//   - paused: ExitPaused; the summary names the limit; Next resumes.
//   - canceled: ExitFailed, or ExitInterrupted when the cause was
//     ErrSignalInterrupt (Ctrl-C); Next resumes.
//   - failed (the error event's message is in the summary), interrupted,
//     and any other status: ExitFailed; Next resumes.
func DescribeOutcome(res *Result, pending []HumanRequest) Outcome {
	id := res.SessionID
	resume := []NextStep{{Kind: NextResume, SessionID: id}}
	switch res.Status {
	case session.StatusDone:
		return Outcome{ExitCode: ExitDone, Summary: fmt.Sprintf("session %s is done", id),
			Next: []NextStep{{Kind: NextContinue, SessionID: id}}}
	case session.StatusWaiting:
		o := Outcome{ExitCode: ExitWaiting, Summary: fmt.Sprintf("session %s is waiting for a person", id)}
		for _, q := range pending {
			kind := NextRespond
			if q.Kind == session.RequestApproval {
				kind = NextResolve
			}
			o.Next = append(o.Next, NextStep{Kind: kind, SessionID: id, RequestID: q.ID, RequestKind: q.Kind,
				Question: q.Question, Options: q.Options, Multi: q.Multi})
		}
		return o
	case session.StatusPaused:
		why := "at its round limit"
		if res.Reason != "" && res.Reason != "max_rounds" {
			why = "at limits." + res.Reason
		}
		return Outcome{ExitCode: ExitPaused, Summary: fmt.Sprintf("session %s paused %s", id, why), Next: resume}
	case session.StatusCanceled:
		if res.Reason == CodeSignalInterrupt {
			return Outcome{ExitCode: ExitInterrupted, Summary: fmt.Sprintf("session %s: run stopped by Ctrl-C", id), Next: resume}
		}
		return Outcome{ExitCode: ExitFailed, Summary: fmt.Sprintf("session %s: run canceled", id), Next: resume}
	case session.StatusFailed:
		s := fmt.Sprintf("session %s: run failed", id)
		if res.Err != nil && res.Err.Message != "" {
			s += ": " + res.Err.Message
		}
		return Outcome{ExitCode: ExitFailed, Summary: s, Next: resume}
	}
	s := fmt.Sprintf("session %s: run %s", id, res.Status)
	if res.Reason != "" {
		s += " (" + res.Reason + ")"
	}
	return Outcome{ExitCode: ExitFailed, Summary: s, Next: resume}
}

// shellQuote returns s as one word of a POSIX shell: as it is when it
// holds only characters no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:@%+=,", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
