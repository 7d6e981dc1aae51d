package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt/tool"
	"github.com/google/go-cmp/cmp"
)

// Replace swaps a group of tools in one step: a tool put under a removed
// name keeps that name's place, new ones go last, and the generation
// moves once per change.
func TestReplace(t *testing.T) {
	t.Parallel()
	r, err := tool.NewRegistry(rawEcho("calc"), rawEcho("fs.read"), rawEcho("fs.list"), rawEcho("clock"))
	if err != nil {
		t.Fatal(err)
	}
	gen := r.Generation()
	newRead := rawEcho("fs.read")
	if err := r.Replace([]string{"fs.read", "fs.list", "fs.gone-already"}, newRead, rawEcho("fs.write")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"calc", "fs.read", "clock", "fs.write"}, r.Names()); diff != "" {
		t.Errorf("names after Replace (-want +got):\n%s", diff)
	}
	if got, _ := r.Get("fs.read"); got != newRead {
		t.Error("fs.read is still the old tool")
	}
	if res := r.Call(context.Background(), "fs.list", json.RawMessage(`{}`)); res.OK || !errors.Is(res.Err, tool.ErrUnknownTool) {
		t.Errorf("a call of a removed tool: %+v, want an unknown tool error", res)
	}
	if res := r.Call(context.Background(), "fs.write", json.RawMessage(`{"x":1}`)); !res.OK || string(res.Output) != `{"x":1}` {
		t.Errorf("a call of an added tool: %+v", res)
	}
	if g := r.Generation(); g == gen {
		t.Errorf("the generation did not move: %d", g)
	}
	gen = r.Generation()
	// Nothing to do is no change: readers keep what they derived.
	if err := r.Replace([]string{"nope"}); err != nil {
		t.Fatal(err)
	}
	if g := r.Generation(); g != gen {
		t.Errorf("a Replace that changes nothing moved the generation from %d to %d", gen, g)
	}
}

// A Replace that cannot be done changes nothing.
func TestReplaceErrors(t *testing.T) {
	t.Parallel()
	r, err := tool.NewRegistry(rawEcho("a"), rawEcho("b"))
	if err != nil {
		t.Fatal(err)
	}
	gen := r.Generation()
	for _, tc := range []struct {
		name   string
		remove []string
		add    []tool.Tool
		want   string
	}{
		{"taken by a tool that stays", []string{"a"}, []tool.Tool{rawEcho("b")}, `duplicate tool name "b"`},
		{"added twice", []string{"a"}, []tool.Tool{rawEcho("a"), rawEcho("a")}, `duplicate tool name "a"`},
		{"invalid name", []string{"a"}, []tool.Tool{rawEcho("a b")}, `invalid tool name "a b"`},
		{"nil tool", []string{"a"}, []tool.Tool{nil}, "nil tool"},
	} {
		if err := r.Replace(tc.remove, tc.add...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Replace error %v, want %q", tc.name, err, tc.want)
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, r.Names()); diff != "" || r.Generation() != gen {
		t.Errorf("failed Replaces changed the registry: generation %d (was %d) (-want +got):\n%s", r.Generation(), gen, diff)
	}
}

// The generation moves with every kind of change, and a registry made by
// Filter has its own.
func TestGeneration(t *testing.T) {
	t.Parallel()
	var r tool.Registry
	seen := map[uint64]bool{r.Generation(): true}
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if g := r.Generation(); seen[g] {
			t.Errorf("%s: the generation %d was seen before", what, g)
		} else {
			seen[g] = true
		}
	}
	step("Add", r.Add(rawEcho("a")))
	step("Replace", r.Replace([]string{"a"}, rawEcho("a")))
	step("SetTimeout", r.SetTimeout("a", time.Second))
	f, err := r.Filter([]string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	before := r.Generation()
	if err := f.Add(rawEcho("b")); err != nil {
		t.Fatal(err)
	}
	if r.Generation() != before {
		t.Error("an Add to a filtered registry moved its source's generation")
	}
}

// A timeout set on a name holds for the tool Replace puts under it later,
// in the registry it was set in (and in one Filter made from it then).
func TestReplaceKeepsSetTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// deadline reports how long its call may take.
		deadline := func(name string) tool.Tool {
			return tool.Must(tool.New(name, "reports its deadline", func(ctx context.Context, _ struct{}) (time.Duration, error) {
				d, ok := ctx.Deadline()
				if !ok {
					return 0, errors.New("no deadline")
				}
				return time.Until(d), nil
			}))
		}
		r, err := tool.NewRegistry(deadline("fs.read"))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.SetTimeout("fs.read", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		f, err := r.Filter([]string{"fs.*"})
		if err != nil {
			t.Fatal(err)
		}
		for _, reg := range []*tool.Registry{r, f} {
			// Removed, then back: the setting is the name's.
			if err := reg.Replace([]string{"fs.read"}); err != nil {
				t.Fatal(err)
			}
			if err := reg.Replace(nil, deadline("fs.read")); err != nil {
				t.Fatal(err)
			}
			res := reg.Call(context.Background(), "fs.read", nil)
			if !res.OK || string(res.Output) != "5000000000" {
				t.Errorf("the replaced tool's timeout: %+v, want 5s", res)
			}
		}
	})
}

// Match is Filter's pattern matching.
func TestMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"fs.*", "fs.read_file", true},
		{"fs.*", "fsx.read", false},
		{"*_file", "fs.read_file", true},
		{"calc", "calc", true},
		{"calc", "calculator", false},
		{"*", "anything", true},
	} {
		if got := tool.Match(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}
