//go:build unix

package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// What agentrt says when it reads from a terminal that a person typed a
// command at: "run -" and "send -" wait for the input, "mcp serve" for a
// client's messages. Said only on a terminal: from /dev/null (a character
// device, no terminal) or a pipe there is nobody to tell, and the
// program or script reading stderr gets no extra line.

const (
	stdinHint    = "agentrt: reading the input from the terminal; end it with Ctrl-D on an empty line\n"
	mcpServeHint = "agentrt mcp serve: serving the agents as MCP tools over stdin and stdout, for an MCP client that starts this command (Ctrl-D ends)\n"
)

func TestStdinInputOnATerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string // on stdout
	}{
		{"run", []string{"run", "--session", "s1", "-"}, "2+3 = 5\n"},
		{"send", []string{"send", "--source", "chat", "-"}, "in_"},
	} {
		t.Run(tc.name+" - on a terminal: told how to end the input", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, demoConfig, nil)
			tm := onTerminal(t, e.dir, stdinTerminal, "", false, append([]string{"--config", e.config}, tc.args...)...)
			tm.waitFor(stdinHint, 1)
			tm.typeText("what is 2+3\n\x04") // Ctrl-D on an empty line ends the input
			if code := tm.wait(); code != cli.ExitOK {
				t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
			}
			if !strings.Contains(tm.stdout.String(), tc.want) {
				t.Errorf("stdout %q, want %q in it", tm.stdout, tc.want)
			}
		})
		t.Run(tc.name+" - from a pipe: nothing said", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, demoConfig, nil)
			tm := onTerminal(t, e.dir, stdinPipe, "what is 2+3\n", false, append([]string{"--config", e.config}, tc.args...)...)
			if code := tm.wait(); code != cli.ExitOK {
				t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
			}
			if shown := tm.shown(); strings.Contains(shown, "reading the input") {
				t.Errorf("told a pipe how to end its input; the terminal showed:\n%s", shown)
			}
			if !strings.Contains(tm.stdout.String(), tc.want) {
				t.Errorf("stdout %q, want %q in it", tm.stdout, tc.want)
			}
		})
		t.Run(tc.name+" - from /dev/null: nothing said, the input is empty", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, demoConfig, nil)
			tm := onTerminal(t, e.dir, stdinNull, "", false, append([]string{"--config", e.config}, tc.args...)...)
			if code := tm.wait(); code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d; the terminal showed:\n%s", code, cli.ExitUsage, tm.shown())
			}
			if shown := tm.shown(); strings.Contains(shown, "reading the input") || !strings.Contains(shown, "is empty") {
				t.Errorf("want only the empty input refused; the terminal showed:\n%s", shown)
			}
		})
	}
}

func TestMCPServeOnATerminal(t *testing.T) {
	t.Parallel()
	t.Run("on a terminal: says what it waits for", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, demoConfig, nil)
		tm := onTerminal(t, e.dir, stdinTerminal, "", false, "--config", e.config, "mcp", "serve")
		tm.waitFor(mcpServeHint, 1)
		tm.typeText("\x04")
		if code := tm.wait(); code != cli.ExitOK {
			t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
		}
		if tm.stdout.Len() != 0 {
			t.Errorf("stdout, the protocol's, has %q", tm.stdout)
		}
	})
	t.Run("from /dev/null: nothing said", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, demoConfig, nil)
		tm := onTerminal(t, e.dir, stdinNull, "", false, "--config", e.config, "mcp", "serve")
		if code := tm.wait(); code != cli.ExitOK {
			t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
		}
		if shown := tm.shown(); strings.Contains(shown, "mcp serve:") {
			t.Errorf("the terminal showed:\n%s", shown)
		}
	})
}
