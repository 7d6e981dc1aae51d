package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/config"
)

// docSection returns the section of docs/configuration.md under heading
// "## name", up to the next section.
func docSection(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## "+name+"\n")
	if !ok {
		t.Fatalf("docs/configuration.md has no section %q", name)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// fences returns the fenced blocks of a Markdown text, in order.
func fences(md string) []string {
	var blocks []string
	var cur []string
	in := false
	for line := range strings.Lines(md) {
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, ""))
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// yamlKeys returns the key paths a config type takes, below prefix:
// inline structs add their keys, maps of structs their entry's, NAME.
func yamlKeys(typ reflect.Type, prefix string) []string {
	var keys []string
	for f := range typ.Fields() {
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if opts == "inline" || strings.Contains(opts, "inline") {
			keys = append(keys, yamlKeys(f.Type, prefix)...)
			continue
		}
		path := prefix + "." + tag
		switch {
		case f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct:
			// The docs name an entry, not the map.
			keys = append(keys, path+".NAME")
			keys = append(keys, yamlKeys(f.Type.Elem(), path+".NAME")...)
		case f.Type.Kind() == reflect.Struct:
			keys = append(keys, path)
			keys = append(keys, yamlKeys(f.Type, path)...)
		default:
			keys = append(keys, path)
		}
	}
	return keys
}

// tableKeys returns the key paths the first column of a Markdown table
// names: "`a.b.c`, `.d`" is a.b.c and a.b.d.
func tableKeys(md string) []string {
	var keys []string
	for line := range strings.Lines(md) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		var base string
		for item := range strings.SplitSeq(cells[1], ",") {
			key := strings.Trim(strings.TrimSpace(item), "`")
			if strings.HasPrefix(key, ".") {
				key = base + key
			} else {
				base = key[:max(strings.LastIndex(key, "."), 0)]
			}
			keys = append(keys, key)
		}
	}
	return keys
}

// The Gateway section of docs/configuration.md stays true to the config:
// its table has a row for every key of the gateway block, of a source and
// of an agent's gateway, and for no other; its example is a valid config
// that writes every key; the problems it shows for its bad file are what
// config check says, line for line.
func TestGatewayDocs(t *testing.T) {
	t.Parallel()
	doc := docSection(t, "Gateway")

	want := yamlKeys(reflect.TypeFor[config.Gateway](), "gateway")
	want = append(want, yamlKeys(reflect.TypeFor[config.GatewaySettings](), "agents.NAME.gateway")...)
	slices.Sort(want)
	got := tableKeys(doc)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the keys the Gateway section's table documents (-config +docs):\n%s", diff)
	}

	blocks := fences(doc)
	if len(blocks) < 3 {
		t.Fatalf("the Gateway section has %d fenced blocks, want its example, a bad file and config check's report", len(blocks))
	}
	unset := func(string) (string, bool) { return "", false }
	example, bad, report := blocks[0], blocks[1], blocks[2]
	if _, err := config.Parse("agentrt.yaml", []byte(example), unset); err != nil {
		t.Errorf("the example does not parse:\n%v", err)
	}
	for _, key := range want {
		leaf := key[strings.LastIndex(key, ".")+1:]
		if leaf != "NAME" && !strings.Contains(example, leaf+":") {
			t.Errorf("the example does not write %s", key)
		}
	}
	_, err := config.Parse("agentrt.yaml", []byte(bad), unset)
	if err == nil {
		t.Fatal("the bad file parses")
	}
	if diff := cmp.Diff(strings.TrimSpace(report), err.Error()); diff != "" {
		t.Errorf("config check's report of the bad file (-docs +config):\n%s", diff)
	}
}

// TestServerDocs keeps the Server section of docs/configuration.md true:
// its table documents every key of the server block, no other, and its
// example parses.
func TestServerDocs(t *testing.T) {
	t.Parallel()
	doc := docSection(t, "Server")
	want := yamlKeys(reflect.TypeFor[config.Server](), "server")
	want = append(want, yamlKeys(reflect.TypeFor[config.APIKey](), "server.api_keys[]")...)
	slices.Sort(want)
	got := tableKeys(doc)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the keys the Server section's table documents (-config +docs):\n%s", diff)
	}
	blocks := fences(doc)
	if len(blocks) < 1 {
		t.Fatal("the Server section has no example")
	}
	env := func(k string) (string, bool) { return "k-" + k, true }
	if _, err := config.Parse("agentrt.yaml", []byte(blocks[0]), env); err != nil {
		t.Errorf("the example does not parse:\n%v", err)
	}
}
