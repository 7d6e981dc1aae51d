package cli_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/cli"
)

// endless is an input of n bytes of text that it makes as it is read,
// counting what was read.
type endless struct{ n, read int64 }

func (r *endless) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := int64(len(p))
	if k > r.n-r.read {
		k = r.n - r.read
	}
	for i := range p[:k] {
		p[i] = 'a'
	}
	r.read += k
	return int(k), nil
}

// An input larger than max_input_bytes is refused, and stdin is read no
// further than the limit: 200 MB piped in are not held in memory.
func TestInputLimit(t *testing.T) {
	t.Parallel()
	run := func(e *env, in io.Reader, args ...string) result {
		var out, errb bytes.Buffer
		code := cli.MainWith(t.Context(), append([]string{"--config", e.config}, args...), cli.Streams{In: in, Out: &out, Err: &errb}, e.opts)
		return result{code: code, out: out.String(), err: errb.String()}
	}
	t.Run("the default, from stdin", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, demoConfig, nil)
		in := &endless{n: 200 << 20}
		r := run(e, in, "run", "--session", "big", "-")
		want := fmt.Sprintf("agentrt: the input on stdin is larger than %d bytes, the most agentrt takes (max_input_bytes in agentrt.yaml)\n", config.DefaultMaxInputBytes)
		if r.code != cli.ExitUsage || r.err != want {
			t.Errorf("%v\nwant exit 2 and %q", r, want)
		}
		if in.read > config.DefaultMaxInputBytes+64<<10 {
			t.Errorf("read %d bytes of stdin, more than the limit", in.read)
		}
		if r := e.run("sessions", "list"); strings.Contains(r.out, "big") {
			t.Errorf("a session was made for a refused input:\n%s", r.out)
		}
	})
	t.Run("configured, stdin and argument", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, demoConfig+"max_input_bytes: 100\n", nil)
		if r := run(e, strings.NewReader(strings.Repeat("1+", 50)+"1"), "run", "-"); r.code != cli.ExitUsage || !strings.Contains(r.err, "the input on stdin is larger than 100 bytes") {
			t.Errorf("stdin: %v", r)
		}
		if r := e.run("run", strings.Repeat("x", 101)); r.code != cli.ExitUsage || !strings.Contains(r.err, "the input is larger than 100 bytes") {
			t.Errorf("argument: %v", r)
		}
		if r := run(e, strings.NewReader("what is "+strings.Repeat("1+", 40)+"1"), "run", "-"); r.code != cli.ExitOK {
			t.Errorf("an input within the limit: %v", r)
		}
	})
}
