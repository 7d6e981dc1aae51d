package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// compaction: off (or false, or {off: true}) turns compaction off; on,
// true or nothing leaves the runtime's defaults; off with settings, or a
// scalar that is neither, is an error at its place.
func TestCompactionOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  Compaction
	}{
		{"off", Compaction{Off: true}},
		{"OFF", Compaction{Off: true}},
		{"false", Compaction{Off: true}},
		{"{off: true}", Compaction{Off: true}},
		{"{off: false, max_messages: 40}", Compaction{MaxMessages: 40}},
		{"on", Compaction{}},
		{"true", Compaction{}},
		{"", Compaction{}},
		{"{keep_recent: 6}", Compaction{KeepRecent: 6}},
	} {
		c, err := Parse("agentrt.yaml", []byte(base+"  b: {model: m, compaction: "+tc.value+"}\n"), envOf(nil))
		if err != nil {
			t.Fatalf("compaction: %s: %v", tc.value, err)
		}
		if diff := cmp.Diff(tc.want, c.Agents["b"].Compaction); diff != "" {
			t.Errorf("compaction: %s (-want +got):\n%s", tc.value, diff)
		}
	}
	// Written back out, off reads back in.
	c, err := Parse("agentrt.yaml", []byte(base+"  b: {model: m, compaction: off}\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Parse("out.yaml", out, envOf(nil)); err != nil || !again.Agents["b"].Compaction.Off {
		t.Errorf("Parse(Marshal(c)): %v, %+v\n%s", err, again, out)
	}
	for _, tc := range []struct{ value, want string }{
		{"never", `agentrt.yaml:5:29: agents.b.compaction: expected off, on or a mapping such as {max_messages: 40}, got "never"`},
		{"{off: true, max_messages: 40}", `agentrt.yaml:5:29: agents.b.compaction: off with settings: compaction is either off or configured, not both`},
		{"{off: yes}", `agentrt.yaml:5:35: agents.b.compaction.off: expected true or false, got "yes"`},
		{"[off]", `agentrt.yaml:5:29: agents.b.compaction: expected a mapping, got a list`},
	} {
		if got := parseErr(t, base+"  b: {model: m, compaction: "+tc.value+"}\n", nil); got != tc.want {
			t.Errorf("compaction: %s:\n got: %s\nwant: %s", tc.value, got, tc.want)
		}
	}
}
