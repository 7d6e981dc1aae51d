package config

import (
	"strings"
	"testing"
)

// A tab that indents a line is named as such, at its line and column,
// whatever yaml.v3 said about it and wherever it said it.
func TestTabIndentation(t *testing.T) {
	t.Parallel()
	const tab = "YAML syntax error: a tab character indents this line; YAML indents with spaces only"
	tests := []struct {
		name, src, want string
	}{
		{"a key indented with a tab", "agents:\n  a:\n\tmodel: m\n", "agentrt.yaml:3:1: " + tab + " (found character that cannot start any token)"},
		{"the first line", "\tstore: \"memory:\"\n", "agentrt.yaml:1:1: " + tab + " (found character that cannot start any token)"},
		{"after spaces", "models:\n  m: {provider: demo}\n  \tn: {provider: demo}\n", "agentrt.yaml:3:3: " + tab},
		{"a list item, yaml's line early", "agents:\n  a:\n    model: m\n    tools:\n      - clock\n\t  - calculator\n", "agentrt.yaml:6:1: " + tab},
		{"a blank line of a tab", "models:\n  m: {provider: demo}\n\t\nagents:\n  a: {model: m}\n", "agentrt.yaml:3:1: " + tab},
		{"in a block scalar's indentation", "agents:\n  a:\n    model: m\n    instructions: |\n      be brief\n\tand kind\n", "agentrt.yaml:6:1: " + tab},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("agentrt.yaml", []byte(tt.src), envOf(nil))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got  %v\nwant %s…", err, tt.want)
			}
		})
	}
}

// Tabs YAML allows are no problem: between a key and its value, inside a
// block scalar's text past its indentation.
func TestTabsAllowed(t *testing.T) {
	t.Parallel()
	src := "models:\n  m:\t{provider: demo}\nagents:\n  a:\n    model: m\n    instructions: |\n      be brief\n      \tand kind\n"
	if _, err := Parse("agentrt.yaml", []byte(src), envOf(nil)); err != nil {
		t.Fatal(err)
	}
}

func TestMaxInputBytes(t *testing.T) {
	t.Parallel()
	c := parse(t, "max_input_bytes: 4096\n", nil)
	if c.MaxInputBytes != 4096 || c.InputLimit() != 4096 {
		t.Errorf("MaxInputBytes %d, InputLimit %d; want 4096", c.MaxInputBytes, c.InputLimit())
	}
	if got := Default().InputLimit(); got != DefaultMaxInputBytes {
		t.Errorf("default InputLimit %d, want %d", got, DefaultMaxInputBytes)
	}
	for src, want := range map[string]string{
		"max_input_bytes: -1\n":  "agentrt.yaml:1:18: max_input_bytes: must not be negative, got -1",
		"max_input_bytes: 1MB\n": `agentrt.yaml:1:18: max_input_bytes: expected an integer, got "1MB"`,
	} {
		if _, err := Parse("agentrt.yaml", []byte(src), envOf(nil)); err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %s", src, err, want)
		}
	}
}
