package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/session"
)

func newResumeCmd(g *globals) *cobra.Command {
	var asJSON bool
	var approve string
	cmd := &cobra.Command{
		Use:   "resume SESSION",
		Short: "continue a session whose run stopped (crash, pause, approval)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				p := newPrinter(g.s, asJSON, noticesFor(ctx, a, args[0]))
				p.decideBy(approve)
				res := p.print(a.Runner.Resume(ctx, args[0]))
				if isWaiting(res.err) {
					// Nothing to resume before a person answers: ask on a
					// terminal, else say how to answer.
					res = runResult{status: session.StatusWaiting, json: asJSON}
				}
				return finishRun(ctx, g, a, p, approve, args[0], res)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line")
	cmd.Flags().StringVar(&approve, "approve", "ask", "tool calls that need approval: ask, auto or deny")
	return cmd
}

func newApproveCmd(g *globals) *cobra.Command {
	var reject, asJSON, noResume, always bool
	var reason, args, by, alwaysFor, alwaysMatch string
	cmd := &cobra.Command{
		Use:   "approve SESSION REQUEST [--reject] [--reason R] [--args JSON]",
		Short: "approve (or reject) a pending tool call; the run resumes",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a2 []string) error {
			if reject && args != "" {
				return usageErr("--args cannot be used with --reject")
			}
			res := agentrt.Resolution{Decision: session.DecisionApprove, Reason: reason, By: decider(by)}
			if reject {
				res.Decision = session.DecisionReject
			}
			if args != "" {
				res.Decision = session.DecisionEdit
				res.Arguments = []byte(args)
			}
			if always {
				res.Always = &agentrt.Always{Scope: alwaysFor, Match: alwaysMatch}
			} else if alwaysFor != "" || alwaysMatch != "" {
				return usageErr("--for and --match go with --always")
			}
			return g.resolve(cmd, a2[0], a2[1], session.RequestApproval, res, asJSON, noResume)
		},
	}
	cmd.Flags().BoolVar(&reject, "reject", false, "reject the call; the model is told so")
	cmd.Flags().StringVar(&reason, "reason", "", "why (shown to the model on reject)")
	cmd.Flags().StringVar(&args, "args", "", "replacement arguments (a JSON object)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line")
	cmd.Flags().BoolVar(&always, "always", false, "let the decision stand for later calls (see --for, --match; agentrt rules)")
	cmd.Flags().StringVar(&alwaysFor, "for", "", "with --always: session (default) or agent (every session of the agent)")
	cmd.Flags().StringVar(&alwaysMatch, "match", "", "with --always: tool (default: every call of the tool) or arguments (these exact arguments)")
	addDeciderFlags(cmd, &by, &noResume)
	return cmd
}

func newRulesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "rules", Short: "standing decisions: approvals answered \"always\"", Args: cobra.NoArgs, RunE: groupRunE}
	var agentName string
	list := &cobra.Command{
		Use:   "list [SESSION | --agent A]",
		Short: "the standing decisions in force for a session (its own and its agent's), an agent's, or (with neither) every agent's",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && agentName != "" {
				return usageErr("name a session or an agent (--agent), not both")
			}
			return g.withAppReading(cmd, func(ctx context.Context, a *app.App) error {
				if len(args) == 0 && agentName == "" {
					// A session's own decisions live in its log: say how
					// to see them, whatever the agents have.
					defer fmt.Fprintf(g.s.Err, "these are the agents' standing decisions; a session's own (approve --always without --for agent): %s rules list SESSION\n", g.flags().Prefix())
				}
				var rules []session.Rule
				switch {
				case len(args) == 1:
					rs, err := a.Runner.Rules(ctx, args[0])
					if err != nil {
						return err
					}
					rules = rs
				default:
					agents := a.Runner.AgentNames()
					if agentName != "" {
						agents = []string{agentName}
					}
					for _, name := range agents {
						rs, err := a.Runner.AgentRules(ctx, name)
						if err != nil {
							return err
						}
						rules = append(rules, rs...)
					}
				}
				if len(rules) == 0 {
					fmt.Fprintln(g.s.Err, "no standing decisions")
					return nil
				}
				tw := tabwriter.NewWriter(g.s.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RULE\tSCOPE\tTOOL\tARGUMENTS\tDECISION\tBY\tWHEN")
				for _, r := range rules {
					args := "(any)"
					if len(r.Arguments) > 0 {
						args = clip(string(r.Arguments), 60)
					}
					scope := r.Scope
					if r.Scope == session.RuleAgent {
						scope += " " + r.Agent
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, scope, r.Tool, args, r.Decision, r.By, r.Time.Local().Format(time.DateTime))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&agentName, "agent", "", "list the agent's standing decisions")
	var reason, by, revokeAgent string
	revoke := &cobra.Command{
		Use:   "revoke (SESSION RULE | --agent A RULE) [--reason R]",
		Short: "end a standing decision (the session's or its agent's; with --agent, the agent's)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) != (revokeAgent != "") {
				return usageErr("name the session and the rule, or the rule with --agent A")
			}
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				var err error
				rule := args[len(args)-1]
				if revokeAgent != "" {
					err = a.Runner.RevokeAgentRule(ctx, revokeAgent, rule, decider(by), reason)
				} else {
					err = a.Runner.RevokeRule(ctx, args[0], rule, decider(by), reason)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(g.s.Err, "revoked %s\n", rule)
				return nil
			})
		},
	}
	revoke.Flags().StringVar(&revokeAgent, "agent", "", "the agent whose standing decision to end")
	revoke.Flags().StringVar(&reason, "reason", "", "why")
	revoke.Flags().StringVar(&by, "by", "", "who revokes (default: the OS user)")
	cmd.AddCommand(list, revoke)
	return cmd
}

// addDeciderFlags adds the flags of the commands that resolve requests.
func addDeciderFlags(cmd *cobra.Command, by *string, noResume *bool) {
	cmd.Flags().StringVar(by, "by", "", "who decides, for the audit trail (default: the OS user)")
	cmd.Flags().BoolVar(noResume, "no-resume", false, "only record the decision; do not continue the run")
}

// decider is who the audit trail says decided: by, else the OS user.
func decider(by string) string {
	if by != "" {
		return by
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

func newRespondCmd(g *globals) *cobra.Command {
	var (
		selected                              string
		done, failed, retry, asJSON, noResume bool
		result, reason, by                    string
	)
	cmd := &cobra.Command{
		Use:   "respond SESSION REQUEST (TEXT | --select a,b | --done [--result JSON] | --failed [--reason R] | --retry)",
		Short: "answer a pending question, choice, or the confirmation of a call whose outcome is in doubt; the run resumes",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			text := strings.Join(a[2:], " ")
			modes := 0
			for _, on := range []bool{text != "", selected != "", done, failed, retry} {
				if on {
					modes++
				}
			}
			if modes != 1 {
				return usageErr("give exactly one of TEXT, --select, --done, --failed or --retry")
			}
			if result != "" && !done {
				return usageErr("--result goes with --done")
			}
			res := agentrt.Resolution{Reason: reason, By: decider(by)}
			kind := session.RequestPrompt
			switch {
			case text != "":
				res.Decision, res.Text = session.DecisionAnswer, text
			case selected != "":
				kind = session.RequestSelect
				res.Decision = session.DecisionAnswer
				for _, s := range strings.Split(selected, ",") {
					res.Selected = append(res.Selected, strings.TrimSpace(s))
				}
			case done:
				kind, res.Decision = session.RequestConfirm, session.DecisionDone
				if result != "" {
					res.Result = json.RawMessage(result)
				}
			case failed:
				kind, res.Decision = session.RequestConfirm, session.DecisionFailed
			case retry:
				kind, res.Decision = session.RequestConfirm, session.DecisionRetry
			}
			return g.resolve(cmd, a[0], a[1], kind, res, asJSON, noResume)
		},
	}
	cmd.Flags().StringVar(&selected, "select", "", "the chosen options, separated by commas")
	cmd.Flags().BoolVar(&done, "done", false, "the call took effect")
	cmd.Flags().StringVar(&result, "result", "", "with --done: the call's result (JSON)")
	cmd.Flags().BoolVar(&failed, "failed", false, "the call did not take effect")
	cmd.Flags().BoolVar(&retry, "retry", false, "run the call again")
	cmd.Flags().StringVar(&reason, "reason", "", "why (shown to the model)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line")
	addDeciderFlags(cmd, &by, &noResume)
	return cmd
}

// resolve records res on request rid of session id, which should be of
// kind want (a mismatch says which command answers it), and resumes the
// run once nothing is pending.
func (g *globals) resolve(cmd *cobra.Command, id, rid string, want session.RequestKind, res agentrt.Resolution, asJSON, noResume bool) error {
	return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
		st, err := a.Runner.Load(ctx, id)
		if err != nil {
			return err
		}
		if q := st.Pending(rid); q != nil && !kindMatches(q.Kind, want) {
			return usageErr("request %s is %s, not %s; answer it with: %s", rid, describeKind(q.Kind), describeKind(want), g.howToResolve(id, *q))
		}
		// With --json, the events this command caused, from the first:
		// the decision, then those of the run it continues.
		p := newPrinter(g.s, asJSON, noticesFor(ctx, a, id))
		if noResume {
			ev, err := a.Runner.Resolve(ctx, id, rid, res)
			if err != nil {
				return err
			}
			if err := g.showResolved(ctx, a, p, id, ev, false); err != nil {
				return err
			}
			if st, err = a.Runner.Load(ctx, id); err != nil {
				return err
			}
			if len(st.Requests) > 0 {
				fmt.Fprintf(g.s.Err, "recorded; session %s still waits for %d request(s)\n", id, len(st.Requests))
				return g.outcome(ctx, a, id, runResult{status: session.StatusWaiting})
			}
			fmt.Fprintf(g.s.Err, "recorded; continue with: %s\n", g.command(agentrt.NextStep{Kind: agentrt.NextResume, SessionID: id}))
			return nil
		}
		// The answer, and when it is the last, the run going on: in one
		// hold of the session, so that whoever answers last continues
		// it, exactly once.
		out, err := a.Runner.ResolveAndContinue(ctx, id, rid, res)
		if err != nil {
			return err
		}
		if err := g.showResolved(ctx, a, p, id, out.Event, false); err != nil {
			return err
		}
		if out.Run == nil {
			if out.Pending > 0 {
				fmt.Fprintf(g.s.Err, "recorded; session %s still waits for %d request(s)\n", id, out.Pending)
			}
			return g.outcome(ctx, a, id, runResult{status: session.StatusWaiting})
		}
		return finishRun(ctx, g, a, p, "ask", id, g.follow(ctx, p, out.Run))
	})
}

// kindMatches reports whether a request of kind k can be answered the way
// want says; a prompt's text can also answer a select request.
func kindMatches(k, want session.RequestKind) bool {
	return k == want || k == session.RequestSelect && want == session.RequestPrompt
}

func describeKind(k session.RequestKind) string {
	switch k {
	case session.RequestApproval:
		return "an approval"
	case session.RequestConfirm:
		return "the confirmation of a call whose outcome is in doubt"
	case session.RequestSelect:
		return "a choice"
	}
	return "a question"
}

func newRecoverCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "resume the sessions whose process stopped (their lease expired, or their process died), and wait for them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				runs, err := a.Runner.Recover(ctx)
				if err != nil {
					return err
				}
				if len(runs) == 0 {
					fmt.Fprintln(g.s.Err, "agentrt: nothing to recover")
					return nil
				}
				var parts []string
				for _, h := range runs {
					res, err := h.Wait(ctx)
					if err != nil {
						return err
					}
					parts = append(parts, fmt.Sprintf("%s (%s)", h.SessionID(), res.Status))
					if asJSON {
						json.NewEncoder(g.s.Out).Encode(map[string]any{"session_id": h.SessionID(), "status": res.Status})
					}
				}
				s := "s"
				if len(runs) == 1 {
					s = ""
				}
				fmt.Fprintf(g.s.Err, "agentrt: recovered %d session%s: %s\n", len(runs), s, strings.Join(parts, ", "))
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON line per recovered session")
	return cmd
}

func newSessionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "inspect and manage sessions", Args: cobra.NoArgs, RunE: groupRunE}
	var limit int
	var listJSON bool
	list := &cobra.Command{
		Use:   "list [--limit N] [--json]",
		Short: "list sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withAppReading(cmd, func(ctx context.Context, a *app.App) error {
				// The agents' rule logs (agentrt rules) are not listed.
				ss, _, err := a.Runner.ListSessions(ctx, session.ListOptions{Limit: limit})
				if err != nil {
					return err
				}
				if listJSON {
					type listed struct {
						*session.Session
						FirstInput string `json:"first_input,omitempty"`
					}
					out := make([]listed, len(ss))
					for i, s := range ss {
						out[i] = listed{s, firstInput(ctx, a, s.ID)}
					}
					enc := json.NewEncoder(g.s.Out)
					enc.SetIndent("", "  ")
					return enc.Encode(out)
				}
				if len(ss) == 0 {
					fmt.Fprintln(g.s.Err, "no sessions")
					return nil
				}
				tw := tabwriter.NewWriter(g.s.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tTURN\tEVENTS\tUPDATED\tFIRST INPUT")
				for _, s := range ss {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.ID, s.Agent, s.Status, s.Turn, s.LastSeq,
						s.UpdatedAt.Local().Format(time.DateTime), firstInput(ctx, a, s.ID))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 50, "how many")
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON: the sessions, each with its first input")
	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "show a session: status, turn, usage, pending requests, what goes on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withAppReading(cmd, func(ctx context.Context, a *app.App) error {
				s, err := a.Store.GetSession(ctx, args[0])
				if err != nil {
					return notFound(args[0], err)
				}
				st, err := a.Runner.Load(ctx, args[0])
				if err != nil {
					return err
				}
				if showJSON {
					// Everything the text shows: the session, what is
					// pending, the answer, and the commands that go on.
					type step struct {
						agentrt.NextStep
						Command string `json:"command"`
					}
					var next []step
					for _, n := range nextSteps(s, st, time.Now()) {
						next = append(next, step{n, g.command(n)})
					}
					enc := json.NewEncoder(g.s.Out)
					enc.SetIndent("", "  ")
					return enc.Encode(map[string]any{"session": s, "pending": st.Requests, "final": st.Final, "next": next})
				}
				out := g.s.Out
				fmt.Fprintf(out, "session  %s\nagent    %s\nstatus   %s\nturn     %d\nevents   %d\n", s.ID, s.Agent, s.Status, s.Turn, s.LastSeq)
				fmt.Fprintf(out, "usage    %d input, %d output tokens", s.Usage.InputTokens, s.Usage.OutputTokens)
				if s.Usage.CostUSD > 0 {
					fmt.Fprintf(out, ", $%.6f", s.Usage.CostUSD)
				}
				fmt.Fprintf(out, "\ncreated  %s\nupdated  %s\n", s.CreatedAt.Local().Format(time.DateTime), s.UpdatedAt.Local().Format(time.DateTime))
				orphaned := agentrt.Orphaned(s, time.Now())
				if l := s.Lease; l != nil && time.Now().Before(l.Expires) {
					gone := ""
					if orphaned {
						gone = ", but that process is gone"
					}
					fmt.Fprintf(out, "lease    held by %s until %s%s\n", l.Owner, l.Expires.Local().Format(time.DateTime), gone)
				}
				if orphaned {
					fmt.Fprintf(out, "next     no process runs it (the one that did stopped: a crash, a kill); continue with: %s\n",
						g.command(agentrt.NextStep{Kind: agentrt.NextResume, SessionID: s.ID}))
				}
				for _, q := range st.Requests {
					age := time.Since(q.Asked).Round(time.Second)
					expires := ""
					if q.Expires != nil {
						expires = ", expires " + q.Expires.Local().Format(time.DateTime)
					}
					fmt.Fprintf(out, "pending  %s (%s, asked %s ago%s): %s\n           %s\n", q.ID, q.Kind, age, expires, clip(q.Question, 300), g.howToResolve(s.ID, q))
				}
				if s.Status == session.StatusWaiting && len(st.Requests) == 0 {
					// Decided with --no-resume (or by another process that
					// has not resumed yet): only a resume is missing.
					fmt.Fprintf(out, "next     every request is answered; continue with: %s\n", g.command(agentrt.NextStep{Kind: agentrt.NextResume, SessionID: s.ID}))
				}
				if st.Final != "" {
					fmt.Fprintf(out, "answer   %s\n", st.Final)
				}
				return nil
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	var afterText string
	var follow bool
	events := &cobra.Command{
		Use:   "events ID [--after N] [--follow] [--json]",
		Short: "print a session's events as JSON lines; with --follow, then each new one as it commits, and live tokens (Ctrl-C ends)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			after, err := strconv.ParseInt(afterText, 10, 64)
			if err != nil || after < 0 {
				return usageErr("--after wants a seq number (0 or more), not %q", afterText)
			}
			return g.withAppReading(cmd, func(ctx context.Context, a *app.App) error {
				enc := json.NewEncoder(g.s.Out)
				if follow {
					// Committed events, from this process or any other,
					// and the live tokens of a run in a process that
					// relays them to this one (Postgres), until Ctrl-C
					// (which cancels ctx and ends Watch).
					for e, err := range a.Runner.Watch(ctx, args[0], after) {
						if err != nil {
							return notFound(args[0], err)
						}
						if err := enc.Encode(e); err != nil {
							return err
						}
					}
					return nil
				}
				for e, err := range a.Store.Events(ctx, args[0], after) {
					if err != nil {
						return notFound(args[0], err)
					}
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	events.Flags().StringVar(&afterText, "after", "0", "only events with seq greater than N")
	events.Flags().BoolVar(&follow, "follow", false, "keep printing events as they commit, and a running turn's tokens (no seq: they are not stored) when its process relays them, until Ctrl-C")
	events.Flags().Bool("json", false, "print JSON lines (they always are; the flag is for scripts that pass it to every command)")
	var force bool
	del := &cobra.Command{
		Use:   "delete ID [--force]",
		Short: "delete a session and its log (not one another process is running, nor an agent's rule log, unless --force)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				err := a.Runner.DeleteSession(ctx, args[0], force)
				switch code := agentrt.AsError(err).ErrorCode(); {
				case err == nil:
				case code == agentrt.CodeLeaseHeld || code == agentrt.CodeBusy:
					return usageErr("%s; stop it first (%s), or delete it anyway with --force", oneLine(err),
						g.command(agentrt.NextStep{Kind: agentrt.NextCancel, SessionID: args[0]}))
				case code == agentrt.CodeProtected:
					return usageErr("%s; --force deletes it", oneLine(err))
				default:
					return err
				}
				fmt.Fprintf(g.s.Err, "deleted session %s and its %s\n", args[0], "events")
				return nil
			})
		},
	}
	del.Flags().BoolVar(&force, "force", false, "delete it even while another process runs it (that run then fails), or when it is an agent's rule log")
	var forkAt, forkID, forkModel string
	fork := &cobra.Command{
		Use:   "fork ID --at SEQ [--id NEW]",
		Short: "make a new session whose log is a copy of ID's up to SEQ; it then runs on its own",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if forkAt == "" {
				return usageErr("--at SEQ is required: the seq of the last event to copy (agentrt sessions events %s lists them)", args[0])
			}
			at, err := strconv.ParseInt(forkAt, 10, 64)
			if err != nil {
				return usageErr("--at wants the seq of the last event to copy, not %q", forkAt)
			}
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				s, err := a.Runner.Fork(ctx, args[0], at, agentrt.ForkOptions{ID: forkID, Model: forkModel})
				if err != nil {
					return err
				}
				fmt.Fprintln(g.s.Out, s.ID)
				fmt.Fprintf(g.s.Err, "forked %s at event %d into %s (status %s)\n", args[0], at, s.ID, s.Status)
				return nil
			})
		},
	}
	fork.Flags().StringVar(&forkAt, "at", "", "the seq of the last event to copy")
	fork.Flags().StringVar(&forkID, "id", "", "the new session's id (default: a fresh one)")
	fork.Flags().StringVar(&forkModel, "model", "", "a model of the config the fork's calls use instead of the agent's")
	cmd.AddCommand(list, show, events, del, fork)
	return cmd
}

// firstInput is the session's first input, on one short line ("" when it
// has none).
func firstInput(ctx context.Context, a *app.App, id string) string {
	for e, err := range a.Store.Events(ctx, id, 0) {
		if err != nil {
			return ""
		}
		if d, ok := e.Data.(*session.RunStarted); ok {
			return clip(strings.Join(strings.Fields(d.Input), " "), 50)
		}
		if e.Seq > 1 {
			break
		}
	}
	return ""
}

// nextSteps are the ways to go on with session s, whose state is st, at
// now: those of agentrt.DescribeOutcome for its status, and a resume for a
// waiting session whose requests are all answered (with --no-resume, or
// by a process that has not resumed it yet) or for a running session no
// process runs (agentrt.Orphaned).
func nextSteps(s *session.Session, st *agentrt.State, now time.Time) []agentrt.NextStep {
	if s.Status == session.StatusRunning {
		if agentrt.Orphaned(s, now) {
			return []agentrt.NextStep{{Kind: agentrt.NextResume, SessionID: s.ID}}
		}
		return nil // a process runs it: cancel stops it there
	}
	if s.Status == session.StatusWaiting && len(st.Requests) == 0 {
		return []agentrt.NextStep{{Kind: agentrt.NextResume, SessionID: s.ID}}
	}
	return agentrt.DescribeOutcome(&agentrt.Result{SessionID: s.ID, Status: s.Status}, st.Requests).Next
}

func notFound(id string, err error) error {
	if errors.Is(err, session.ErrNotFound) {
		return usageErr("session %q not found", id)
	}
	return err
}

func newReplayCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "replay SESSION",
		Short: "render a session's event log as a timeline",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withAppReading(cmd, func(ctx context.Context, a *app.App) error {
				var start time.Time
				for e, err := range a.Store.Events(ctx, args[0], 0) {
					if err != nil {
						return notFound(args[0], err)
					}
					if start.IsZero() {
						start = e.Time
					}
					fmt.Fprintf(g.s.Out, "%4d  %8s  t%-2d %-18s %s\n", e.Seq, offset(e.Time.Sub(start)), e.Turn, e.Type, Summary(e))
				}
				return nil
			})
		},
	}
}

func offset(d time.Duration) string {
	if d < time.Second {
		return "+" + strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return "+" + d.Round(10*time.Millisecond).String()
}

// Summary is a one-line description of an event for timelines.
func Summary(e *session.Event) string {
	switch d := e.Data.(type) {
	case *session.RunStarted:
		return strconv.Quote(clip(d.Input, 120))
	case *session.RunFinished:
		s := string(d.Status)
		if d.Reason != "" {
			s += " (" + d.Reason + ")"
		}
		return fmt.Sprintf("%s, %d in / %d out tokens", s, d.Usage.InputTokens, d.Usage.OutputTokens)
	case *session.RunResumed:
		return fmt.Sprintf("%s, from %s", d.Reason, d.From)
	case *session.RoundStarted:
		return fmt.Sprintf("round %d of %d", d.Round, d.MaxRounds)
	case *session.ModelStarted:
		if d.Mode != "" {
			return fmt.Sprintf("%s, attempt %d (%s)", d.Model, d.Attempt, d.Mode)
		}
		return fmt.Sprintf("%s, attempt %d", d.Model, d.Attempt)
	case *session.ModelFinished:
		var parts []string
		if d.Content != "" {
			parts = append(parts, strconv.Quote(clip(d.Content, 100)))
		}
		for _, c := range d.ToolCalls {
			parts = append(parts, "calls "+c.Name+" "+clip(string(c.Arguments), 80))
		}
		parts = append(parts, fmt.Sprintf("%s, %dms", d.FinishReason, d.LatencyMS))
		return strings.Join(parts, "; ")
	case *session.ToolCall:
		return d.Name + " " + clip(string(d.Arguments), 100) + " [" + d.CallID + "]"
	case *session.ToolResult:
		if d.OK {
			return fmt.Sprintf("%s ok %s (%dms)", d.Name, clip(string(d.Result), 100), d.LatencyMS)
		}
		return fmt.Sprintf("%s failed: %s", d.Name, clip(d.Error, 100))
	case *session.InputRequired:
		return d.RequestID + ": " + clip(d.Question, 100)
	case *session.InputResolved:
		s := d.RequestID + ": " + d.Decision
		if d.By != "" {
			s += " by " + d.By
		}
		if d.Reason != "" {
			s += " (" + d.Reason + ")"
		}
		return s
	case *session.Interrupted:
		return d.Reason
	case *session.LoopWarning:
		return d.Detector + ": " + clip(d.Detail, 120)
	case *session.PlanCreated:
		return d.Source + ": " + clip(string(d.Plan), 120)
	case *session.PlanStepStarted:
		return fmt.Sprintf("step %d %s %s", d.Index+1, d.Kind, d.Tool)
	case *session.PlanStepFinished:
		return fmt.Sprintf("step %d %s", d.Index+1, d.Status)
	case *session.SubagentStarted:
		return d.Agent + " in " + d.ChildSession + ": " + strconv.Quote(clip(d.Task, 100))
	case *session.SubagentProgress:
		if d.State != "" {
			// A remote child: its task's state, not rounds.
			return strings.TrimSpace(d.ChildSession + " " + d.State + " " + clip(d.Message, 100))
		}
		return fmt.Sprintf("%s round %d", d.ChildSession, d.Round)
	case *session.SubagentCheckpoint:
		return fmt.Sprintf("%s round %d", d.ChildSession, d.Round)
	case *session.SubagentPaused:
		return d.ChildSession + ": " + d.Reason
	case *session.SubagentFinished:
		return d.ChildSession + ": " + strconv.Quote(clip(d.Answer, 100))
	case *session.SubagentError:
		return d.ChildSession + ": " + d.Code + ": " + clip(d.Message, 100)
	case *session.Compaction:
		return fmt.Sprintf("%d messages (%s): %s", d.CompactedCount, d.Reason, strconv.Quote(clip(d.Summary, 100)))
	case *session.Final:
		return strconv.Quote(clip(d.Text, 120))
	case *session.Error:
		s := d.Code + ": " + clip(d.Message, 120)
		if d.Model != "" {
			s = fmt.Sprintf("%s attempt %d: %s", d.Model, d.Attempt, s)
		}
		if d.RetryInMS > 0 {
			s += fmt.Sprintf(" (retry in %s)", time.Duration(d.RetryInMS)*time.Millisecond)
		}
		return s
	case *session.Raw:
		return clip(string(d.JSON), 120)
	}
	return ""
}

func newToolsCmd(g *globals) *cobra.Command {
	var agentName string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools [--agent A]",
		Short: "list the tools an agent can see, with their schemas",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			opts := g.options()
			opts.StoreDSN = "memory:"
			a, err := app.Build(ctx, cfg, opts)
			if err != nil {
				return err
			}
			defer a.Close()
			if agentName == "" {
				// As run chooses.
				if agentName, err = defaultAgent(a); err != nil {
					return err
				}
			}
			ag, ok := a.Runner.Agent(agentName)
			if !ok {
				return usageErr("unknown agent %q (configured: %s)", agentName, strings.Join(a.Runner.AgentNames(), ", "))
			}
			specs := ag.ToolSpecs()
			if asJSON {
				enc := json.NewEncoder(g.s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(specs)
			}
			if len(specs) == 0 {
				fmt.Fprintf(g.s.Out, "agent %s has no tools\n", agentName)
			}
			for _, s := range specs {
				fmt.Fprintf(g.s.Out, "%s\n  %s\n  schema: %s\n", s.Name, s.Description, s.InputSchema)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&agentName, "agent", "", "agent (default: assistant)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "work with agentrt.yaml", Args: cobra.NoArgs, RunE: groupRunE}
	cmd.AddCommand(&cobra.Command{
		Use:   "check [FILE]",
		Short: "validate the config (FILE, else --config, else ./agentrt.yaml) and say precisely what is wrong and where",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				g.config = args[0]
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			// Every model, not only those the agents use: a model kept for
			// later must work too.
			if err := app.CheckAll(cfg, g.options()); err != nil {
				return err
			}
			opts := g.options()
			opts.StoreDSN = "memory:"
			a, err := app.Build(cmd.Context(), cfg, opts)
			if err != nil {
				return err
			}
			a.Close()
			name := cfg.File()
			if name == "" {
				name = "built-in defaults"
			}
			fmt.Fprintf(g.s.Out, "%s: ok (%s, %s)\n", name, count(len(cfg.Agents), "agent"), count(len(cfg.Models), "model"))
			return nil
		},
	})
	return cmd
}

// count is n nouns, in words: "1 agent", "2 agents".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
