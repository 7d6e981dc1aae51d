package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
)

// completions runs cobra's hidden __complete as a shell's completion
// script does, and returns the words it offers, without their
// descriptions.
func completions(t *testing.T, e *env, args ...string) []string {
	t.Helper()
	r := e.must(cli.ExitOK, append([]string{"__complete"}, args...)...)
	var words []string
	for l := range strings.Lines(r.out) {
		l = strings.TrimSuffix(l, "\n")
		if strings.HasPrefix(l, ":") {
			break // the directive ends the words
		}
		word, _, _ := strings.Cut(l, "\t")
		words = append(words, word)
	}
	return words
}

// Shell completion offers the agents of the config, the sessions of the
// tenant (newest first, not the agents' hidden rule logs), and a session's
// pending requests.
func TestCompletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tourConfig+"  researcher: {model: demo, tools: [clock], description: finds things out}\n", nil)
	_, s1req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "s1", "what is 21*2+5"))
	e.must(cli.ExitOK, "run", "--session", "s2", "hello")
	e.must(cli.ExitOK, "--tenant", "acme", "run", "--session", "theirs", "hello")
	// A standing decision of the agent: its hidden rule log is no session
	// to offer.
	_, s3req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "s3", "what is 1+1"))
	e.must(cli.ExitOK, "approve", "--always", "--for", "agent", "s3", s3req)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--agent", ""}, []string{"assistant", "researcher"}},
		{[]string{"run", "--agent", "re"}, []string{"researcher"}},
		{[]string{"tools", "--agent", "a"}, []string{"assistant"}},
		{[]string{"resume", ""}, []string{"s3", "s2", "s1"}},
		{[]string{"sessions", "show", "s"}, []string{"s3", "s2", "s1"}},
		{[]string{"replay", "s2"}, []string{"s2"}},
		{[]string{"run", "--session", ""}, []string{"s3", "s2", "s1"}},
		{[]string{"--tenant", "acme", "cancel", ""}, []string{"theirs"}},
		{[]string{"approve", ""}, []string{"s3", "s2", "s1"}},
		{[]string{"approve", "s1", ""}, []string{s1req}},
		{[]string{"approve", "s2", ""}, nil},
		{[]string{"approve", "s1", "x", ""}, nil},
		{[]string{"resume", "s1", ""}, nil},
	} {
		if got := completions(t, e, tc.args...); !cmp.Equal(got, tc.want) {
			t.Errorf("agentrt %s<Tab>: %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	// Each with what it is.
	r := e.must(cli.ExitOK, "__complete", "approve", "s1", "")
	if !strings.Contains(r.out, "\tapproval: Allow calculator with arguments") {
		t.Errorf("the request's description:\n%s", r.out)
	}
	if r := e.must(cli.ExitOK, "__complete", "resume", "s2"); !strings.HasPrefix(r.out, "s2\tassistant, done\n") {
		t.Errorf("the session's description:\n%s", r.out)
	}
}

// Completing in a directory with no store yet creates none.
func TestCompletionCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, ".agentrt", "agentrt.db")
	r := agentrt(t, app.Options{}, "--store", "sqlite:"+store, "__complete", "resume", "")
	if r.code != cli.ExitOK || strings.Contains(r.out, "\t") {
		t.Errorf("completion of an absent store: %v", r)
	}
	if _, err := os.Stat(filepath.Dir(store)); !os.IsNotExist(err) {
		t.Errorf("completion made %s (%v)", filepath.Dir(store), err)
	}
}
