// Command charge-once shows a tool with a side effect that must happen
// once: a payment. Its process dies right after the card is charged and
// before the result is stored; a second process resumes the session.
//
// The tool is marked tool.Meta{AtMostOnce: true}, so the runtime does not
// run it again blindly: it asks a person whether the charge went through.
// The tool also passes the call's idempotency key (tool.CallInfoFrom) to
// the payment provider, so even a retry charges the card once.
//
//	go run ./examples/charge-once            # a person confirms the charge from the provider's records
//	go run ./examples/charge-once -retry     # a person says retry: the provider recognises the key
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/tool"
)

// provider is a payment provider that, like real ones, de-duplicates
// requests by idempotency key. It keeps its charges in a JSON file.
type provider struct{ path string }

type charge struct {
	Order   string `json:"order"`
	Cents   int    `json:"cents"`
	Receipt string `json:"receipt"`
}

func (p provider) load() (map[string]charge, error) {
	charges := map[string]charge{}
	b, err := os.ReadFile(p.path)
	if errors.Is(err, os.ErrNotExist) {
		return charges, nil
	}
	if err != nil {
		return nil, err
	}
	return charges, json.Unmarshal(b, &charges)
}

// charge charges the card once per key and returns the receipt.
func (p provider) charge(key, order string, cents int) (charge, bool, error) {
	charges, err := p.load()
	if err != nil {
		return charge{}, false, err
	}
	if c, ok := charges[key]; ok {
		return c, false, nil
	}
	c := charge{Order: order, Cents: cents, Receipt: fmt.Sprintf("r-%d", len(charges)+1)}
	charges[key] = c
	b, err := json.Marshal(charges)
	if err != nil {
		return charge{}, false, err
	}
	return c, true, os.WriteFile(p.path, b, 0o644)
}

type chargeIn struct {
	Order string `json:"order" jsonschema:"the order to pay"`
	Cents int    `json:"cents" jsonschema:"the amount, in cents"`
}

func chargeTool(p provider, dieAfterCharge bool) tool.Tool {
	return tool.Must(tool.New("charge", "charges the customer's card for an order",
		func(ctx context.Context, in chargeIn) (map[string]string, error) {
			info, _ := tool.CallInfoFrom(ctx)
			c, fresh, err := p.charge(info.IdempotencyKey, in.Order, in.Cents)
			if err != nil {
				return nil, err
			}
			if fresh {
				fmt.Printf("provider: charged %d cents for %s (key %s, attempt %d), receipt %s\n", in.Cents, in.Order, info.IdempotencyKey, info.Attempt, c.Receipt)
			} else {
				fmt.Printf("provider: key %s was charged already (attempt %d): receipt %s, nothing charged\n", info.IdempotencyKey, info.Attempt, c.Receipt)
			}
			if dieAfterCharge {
				os.Exit(3) // the process dies before the result is stored
			}
			return map[string]string{"receipt": c.Receipt}, nil
		}, tool.Meta{AtMostOnce: true}))
}

func newRunner(ctx context.Context, dir string, m *scripted.Model, dieAfterCharge bool) (*agentrt.Runner, func(), error) {
	store, err := sqlite.Open(ctx, filepath.Join(dir, "agentrt.db"))
	if err != nil {
		return nil, nil, err
	}
	a, err := agentrt.NewAgent("cashier").
		Instructions("Charge orders when asked.").
		Model(m).
		Tools(chargeTool(provider{filepath.Join(dir, "payments.json")}, dieAfterCharge)).
		Build()
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return r, func() { store.Close() }, nil
}

const sessionID = "order-17"

// first is process 1: it runs the turn; the tool charges the card and the
// process dies.
func first(ctx context.Context, dir string) error {
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{
		scripted.ToolCall("charge", map[string]any{"order": "order-17", "cents": 4999}),
	}})
	r, done, err := newRunner(ctx, dir, m, true)
	if err != nil {
		return err
	}
	defer done()
	res, err := r.Send(ctx, sessionID, agentrt.Input{Text: "Charge order-17: 49.99", Agent: "cashier"})
	if err != nil {
		return err
	}
	return fmt.Errorf("the turn ended %s; it should have died in the tool", res.Status)
}

// second is process 2: it resumes the session, and a person answers the
// confirmation the runtime asks for.
func second(ctx context.Context, dir string, retry bool) error {
	m := scripted.New("m", scripted.Reply{
		Text:   "Order-17 is paid: receipt r-1.",
		Expect: &scripted.Expect{LastToolResultContains: `"receipt":"r-1"`},
	})
	r, done, err := newRunner(ctx, dir, m, false)
	if err != nil {
		return err
	}
	defer done()
	_, err = agentrt.Collect(r.Resume(ctx, sessionID))
	if err != nil {
		return err
	}
	st, err := r.Load(ctx, sessionID)
	if err != nil {
		return err
	}
	if len(st.Requests) != 1 || st.Requests[0].Kind != session.RequestConfirm {
		return fmt.Errorf("want one confirm request, got %+v", st.Requests)
	}
	q := st.Requests[0]
	fmt.Printf("input_required (%s): %s\n", q.Kind, q.Question)
	res := agentrt.Resolution{Decision: session.DecisionRetry, By: "ops@example.com"}
	if !retry {
		// The person looks the charge up at the provider, by the key.
		charges, err := provider{filepath.Join(dir, "payments.json")}.load()
		if err != nil {
			return err
		}
		c, ok := charges[tool.IdempotencyKey(sessionID, q.CallID)]
		if !ok {
			return errors.New("the provider has no charge for the call")
		}
		b, _ := json.Marshal(map[string]string{"receipt": c.Receipt})
		res = agentrt.Resolution{Decision: session.DecisionDone, Result: b, By: "ops@example.com"}
	}
	fmt.Printf("respond %s %s by %s\n", res.Decision, res.Result, res.By)
	if _, err := r.Resolve(ctx, sessionID, q.ID, res); err != nil {
		return err
	}
	final, err := agentrt.Collect(r.Resume(ctx, sessionID))
	if err != nil {
		return err
	}
	fmt.Println("final:", final.Text)
	fmt.Println("status:", final.Status)
	charges, err := provider{filepath.Join(dir, "payments.json")}.load()
	if err != nil {
		return err
	}
	fmt.Printf("the provider holds %d charge(s)\n", len(charges))
	return nil
}

func main() {
	retry := flag.Bool("retry", false, "answer the confirmation with retry instead of done")
	child := flag.String("child", "", "run process 1 in this directory (used by the program itself)")
	flag.Parse()
	ctx := context.Background()
	if *child != "" {
		if err := first(ctx, *child); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	dir, err := os.MkdirTemp("", "charge-once-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)

	fmt.Println("== process 1: charges the card, then dies before the result is stored")
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command(self, "-child", dir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	fmt.Println("process 1 exited:", cmd.Run())

	fmt.Println("== process 2: resumes the session")
	if err := second(ctx, dir, *retry); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
