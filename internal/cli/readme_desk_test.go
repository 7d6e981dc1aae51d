package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// readmeSection returns the part of README.md that starts with start and
// ends before end.
func readmeSection(t *testing.T, start, end string) string {
	t.Helper()
	readme := repoFile(t, "README.md")
	_, rest, ok := strings.Cut(readme, start)
	if !ok {
		t.Fatalf("README.md has no %q", start)
	}
	section, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("README.md has no %q after %q", end, start)
	}
	return section
}

// fenced returns the fenced blocks of a Markdown text, each with the
// word after its opening fence ("yaml", or "").
func fenced(md string) (blocks []struct{ lang, text string }) {
	var cur *struct{ lang, text string }
	for line := range strings.Lines(md) {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &struct{ lang, text string }{lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line
		}
	}
	return blocks
}

// shellWords splits a command line as a POSIX shell does words quoted
// with double or single quotes (nothing else is needed here).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quotes in %q", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// shownLine turns a line of output the README shows into a pattern: "…"
// stands for any text (an id, the time).
func shownLine(l string) *regexp.Regexp {
	parts := strings.Split(l, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*?") + "$")
}

// The README's unattended runs, as a new user types them: its
// agentrt.yaml in an empty directory, no model configured (so the demo
// model), each command it shows run as a process in that directory, and
// the output (stdout and stderr, as a terminal interleaves them) line for
// line what the README shows, but for the demo model's notice, which it
// leaves out. The sub-agent answers, the budget pauses the run (exit 4),
// the resume goes on and the loop warning stops the repetition.
func TestReadmeUnattendedRuns(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	section := readmeSection(t, "**Unattended runs.**", "**A busy chat channel.**")
	blocks := fenced(section)
	if len(blocks) != 2 || blocks[0].lang != "yaml" || !strings.HasPrefix(blocks[1].text, "$ agentrt ") {
		t.Fatalf("the README's unattended runs should hold its agentrt.yaml, then its commands and their output; it has %d blocks", len(blocks))
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "agentrt.yaml"), blocks[0].text)

	type command struct {
		args []string
		want []string
	}
	var cmds []command
	for l := range strings.Lines(blocks[1].text) {
		l = strings.TrimSuffix(l, "\n")
		if rest, ok := strings.CutPrefix(l, "$ agentrt "); ok {
			cmds = append(cmds, command{args: shellWords(t, rest)})
			continue
		}
		cmds[len(cmds)-1].want = append(cmds[len(cmds)-1].want, l)
	}
	for _, c := range cmds {
		code, out := runCombined(t, dir, c.args...)
		var got []string
		for l := range strings.Lines(out) {
			if !strings.HasPrefix(l, "agentrt: no model found; using the offline demo model") {
				got = append(got, strings.TrimSuffix(l, "\n"))
			}
		}
		wantCode := cli.ExitOK
		if last := c.want[len(c.want)-1]; strings.Contains(last, " paused at ") {
			wantCode = cli.ExitPaused
		}
		match := len(got) == len(c.want)
		for i := 0; match && i < len(got); i++ {
			match = shownLine(c.want[i]).MatchString(got[i])
		}
		if code != wantCode || !match {
			t.Errorf("agentrt %s: exit %d (want %d); the README shows\n%s\nit printed\n%s",
				strings.Join(c.args, " "), code, wantCode, strings.Join(c.want, "\n"), strings.Join(got, "\n"))
		}
	}
}

// runCombined runs agentrt as a process in dir, with no provider's key
// and no Ollama, and returns its exit code and its stdout and stderr in
// one, in the order it wrote them.
func runCombined(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "AGENTRT_") || strings.HasPrefix(k, "OLLAMA_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "OLLAMA_HOST=127.0.0.1:1", "AGENTRT_CLI_CHILD=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe: the order it wrote in
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("agentrt %s did not end: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}
