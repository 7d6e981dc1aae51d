package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentrt/agentrt/model"
)

// Load reads a script file (see Parse for the format). The model is named
// by the file's name key, or else after the file, without its extension.
// It plays by conversation unless the file says play: in_order (see
// Parse). Errors are reported as path:line:column.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(filepath.Base(path), ext)
	return parse(path, base, "", data, strings.EqualFold(ext, ".json"))
}

// Parse reads a script from YAML or JSON. JSON is read as the YAML it is,
// so a trailing comma passes; Load holds a .json file to strict JSON.
// The model is named name; when name is empty, by the script's name key,
// or else "scripted". Errors are reported as name:line:column, all of them
// at once, and unknown keys are errors. The format, with every key:
//
//	name: calc                       # optional
//	play: by_conversation            # or in_order; see below
//	replies:
//	  - text: "Let me compute that."
//	    tool_calls:
//	      - name: calculator
//	        id: call_1               # optional; default call_<reply>_<call>
//	        arguments: {expression: "2+2"}   # a mapping, or a string of JSON
//	        verbatim: false          # true sends a string as written
//	    chunks: 3                    # stream in 3 pieces; default 1
//	    delay: 2s                    # before the first chunk
//	    usage: {input_tokens: 10, output_tokens: 5, cached_tokens: 0, cost_usd: 0.001}
//	    finish_reason: tool_calls    # stop, tool_calls, length, content_filter, error
//	    error: "upstream timeout"    # the call fails with this error
//	    error_code: rate_limited     # ... classified as a provider's would be (rate_limited,
//	                                 #     timeout, context_length, auth, bad_request, server,
//	                                 #     stream_incomplete); the message defaults to one naming it
//	    retry_after: 2s              # the wait a rate-limited "provider" asks for
//	    expect:
//	      last_user_contains: "2+2"
//	      last_tool_result_contains: '"result":4'
//	      tools_include: [calculator]
//
// Each key means what the Reply, Call, Expect or model.Usage field of the
// same name means.
//
// A script from a file plays by conversation (see ByConversation): a
// request with k assistant messages gets the (k+1)th successful reply,
// after the failing replies just before it, if any, on its first calls
// in this process. So one script serves a conversation across processes
// and turns: a run resumed in another process after reply k plays reply
// k+1. play: in_order plays reply n at the model's nth call in this
// process, as New does, whatever the request: for an agent whose model
// is also asked for a plan or a summary, or shared by several agents.
func Parse(name string, data []byte) (*Model, error) {
	label := name
	if label == "" {
		label = "script"
	}
	return parse(label, "scripted", name, data, false)
}

// parse reads data, labelling errors with label. The model is named name,
// or else by the script, or else fallback.
func parse(label, fallback, name string, data []byte, strictJSON bool) (*Model, error) {
	f, err := decode(label, data, strictJSON)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = f.name
	}
	if name == "" {
		name = fallback
	}
	m, err := build(name, f.replies)
	if err != nil {
		return nil, err
	}
	m.byConversation = f.play != playInOrder
	return m, nil
}

// The values of a script's play key.
const (
	playByConversation = "by_conversation"
	playInOrder        = "in_order"
)

// script is what a script file says.
type script struct {
	name    string
	play    string // playByConversation, playInOrder, or "" for the default
	replies []Reply
}

// decode reads a script. With strictJSON, data must be valid JSON.
func decode(label string, data []byte, strictJSON bool) (script, error) {
	if strictJSON {
		if err := jsonSyntax(data); err != nil {
			return script{}, fmt.Errorf("%s:%w", label, err)
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// The YAML parser's errors on JSON often lack a position.
		if err := jsonSyntax(data); err != nil {
			return script{}, fmt.Errorf("%s:%w", label, err)
		}
		return script{}, fmt.Errorf("%s: %w", label, err)
	}
	d := &decoder{label: label}
	s := d.script(&doc)
	if len(d.errs) > 0 {
		return script{}, errors.Join(d.errs...)
	}
	return s, nil
}

// jsonSyntax reports the position of a syntax error in data that looks like
// JSON, which the YAML parser would describe less clearly.
func jsonSyntax(data []byte) error {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' && t[0] != '[' {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil
	}
	// Offset counts the bytes read, the offending one included.
	line, col := position(data, max(int(se.Offset)-1, 0))
	return fmt.Errorf("%d:%d: %v", line, col, se)
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	off = min(off, len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// decoder walks a script's YAML nodes, collecting every error with its
// position and the path of the field at fault.
type decoder struct {
	label string
	errs  []error
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	if path == "" {
		path = "script"
	}
	d.errs = append(d.errs, fmt.Errorf("%s:%d:%d: %s: %s", d.label, n.Line, n.Column, path, fmt.Sprintf(format, args...)))
}

func (d *decoder) script(doc *yaml.Node) (s script) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		d.errs = append(d.errs, fmt.Errorf("%s: empty script, want a mapping with a replies key", d.label))
		return s
	}
	root := doc.Content[0]
	seen := false
	d.fields(root, "", []string{"name", "play", "replies"}, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			s.name = d.str(v, path)
		case "play":
			s.play = d.str(v, path)
			if v.Kind == yaml.ScalarNode && s.play != playByConversation && s.play != playInOrder {
				d.errorf(v, path, "unknown way to play %q, want %s (the default: the reply that fits the request) or %s (one reply per call, in order)",
					s.play, playByConversation, playInOrder)
			}
		case "replies":
			seen = true
			d.list(v, path, func(n *yaml.Node, path string) { s.replies = append(s.replies, d.reply(n, path)) })
		}
	})
	if !seen && root.Kind == yaml.MappingNode {
		d.errorf(root, "", "no replies key")
	}
	return s
}

func (d *decoder) reply(n *yaml.Node, path string) Reply {
	var r Reply
	keys := []string{"text", "tool_calls", "chunks", "delay", "usage", "finish_reason", "error", "error_code", "retry_after", "expect"}
	d.fields(n, path, keys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "text":
			r.Text = d.str(v, path)
		case "tool_calls":
			d.list(v, path, func(n *yaml.Node, path string) { r.ToolCalls = append(r.ToolCalls, d.call(n, path)) })
		case "chunks":
			r.Chunks = int(d.int(v, path))
		case "delay":
			r.Delay = d.duration(v, path)
		case "usage":
			r.Usage = d.usage(v, path)
		case "finish_reason":
			r.FinishReason = d.finish(v, path)
		case "error":
			r.Error = d.str(v, path)
			if r.Error == "" && v.Kind == yaml.ScalarNode {
				d.errorf(v, path, "empty; remove the key for a reply that succeeds")
			}
		case "error_code":
			r.ErrorCode = model.ErrorCode(d.str(v, path))
			if v.Kind == yaml.ScalarNode && !slices.Contains(errorCodes(), r.ErrorCode) {
				d.errorf(v, path, "unknown error code %q, want one of %v", r.ErrorCode, errorCodes())
			}
		case "retry_after":
			r.RetryAfter = d.duration(v, path)
		case "expect":
			r.Expect = d.expect(v, path)
		}
	})
	return r
}

func (d *decoder) call(n *yaml.Node, path string) Call {
	var c Call
	hasName := false
	d.fields(n, path, []string{"id", "name", "arguments", "verbatim"}, func(key string, v *yaml.Node, path string) {
		switch key {
		case "id":
			c.ID = d.str(v, path)
		case "name":
			hasName = true
			c.Name = d.str(v, path)
			if c.Name == "" && v.Kind == yaml.ScalarNode {
				d.errorf(v, path, "empty")
			}
		case "arguments":
			c.Arguments = d.arguments(v, path)
		case "verbatim":
			c.Verbatim = d.bool(v, path)
		}
	})
	if !hasName && n.Kind == yaml.MappingNode {
		d.errorf(n, path, "no name key: a tool call needs the tool's name")
	}
	if s, ok := c.Arguments.(string); ok && !c.Verbatim {
		// Check here, where the position is known, what New would reject.
		if _, err := arguments(s, false); err != nil {
			d.errorf(n, path+".arguments", "%v", strings.Replace(err.Error(), "set Verbatim", "set verbatim: true", 1))
			c.Arguments = nil
		}
	}
	return c
}

// arguments returns a string of JSON: a mapping converted, keeping its
// key order, or a scalar's text as written.
func (d *decoder) arguments(v *yaml.Node, path string) any {
	if v.Kind == yaml.ScalarNode {
		if v.ShortTag() == "!!null" {
			return nil
		}
		return v.Value
	}
	var b bytes.Buffer
	if err := nodeJSON(&b, v); err != nil {
		d.errorf(v, path, "%v", err)
		return nil
	}
	return b.String()
}

func (d *decoder) usage(n *yaml.Node, path string) *model.Usage {
	u := new(model.Usage)
	keys := []string{"input_tokens", "output_tokens", "cached_tokens", "cost_usd"}
	d.fields(n, path, keys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "input_tokens":
			u.InputTokens = d.int(v, path)
		case "output_tokens":
			u.OutputTokens = d.int(v, path)
		case "cached_tokens":
			u.CachedTokens = d.int(v, path)
		case "cost_usd":
			var f float64
			if v.Kind != yaml.ScalarNode || v.Decode(&f) != nil || f < 0 {
				d.errorf(v, path, "want a non-negative number, got %s", show(v))
			}
			u.CostUSD = f
		}
	})
	return u
}

func (d *decoder) expect(n *yaml.Node, path string) *Expect {
	e := new(Expect)
	keys := []string{"last_user_contains", "last_tool_result_contains", "tools_include"}
	d.fields(n, path, keys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "last_user_contains":
			e.LastUserContains = d.str(v, path)
		case "last_tool_result_contains":
			e.LastToolResultContains = d.str(v, path)
		case "tools_include":
			d.list(v, path, func(n *yaml.Node, path string) { e.ToolsInclude = append(e.ToolsInclude, d.str(n, path)) })
		}
	})
	return e
}

var finishReasons = []model.FinishReason{
	model.FinishStop, model.FinishToolCalls, model.FinishLength, model.FinishContentFilter, model.FinishError,
}

func (d *decoder) finish(v *yaml.Node, path string) model.FinishReason {
	f := model.FinishReason(d.str(v, path))
	if v.Kind == yaml.ScalarNode && !slices.Contains(finishReasons, f) {
		d.errorf(v, path, "unknown finish reason %q, want one of %v", f, finishReasons)
	}
	return f
}

// fields calls f for each key of mapping n, in order, reporting keys that
// are not in known, repeated or not strings.
func (d *decoder) fields(n *yaml.Node, path string, known []string, f func(key string, v *yaml.Node, path string)) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "want a mapping with keys %s, got %s", strings.Join(known, ", "), show(n))
		return
	}
	seen := make(map[string]int, len(known))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, path, "want a key, got %s", show(k))
			continue
		}
		if !slices.Contains(known, k.Value) {
			d.errorf(k, path, "unknown key %q, want one of %s", k.Value, strings.Join(known, ", "))
			continue
		}
		if line, ok := seen[k.Value]; ok {
			d.errorf(k, path, "key %q repeated (first on line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		child := k.Value
		if path != "" {
			child = path + "." + child
		}
		f(k.Value, deref(v), child)
	}
}

func (d *decoder) list(n *yaml.Node, path string, f func(n *yaml.Node, path string)) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "want a list, got %s", show(n))
		return
	}
	for i, item := range n.Content {
		f(deref(item), fmt.Sprintf("%s[%d]", path, i))
	}
}

// str accepts any non-null scalar: a text of 4 is "4".
func (d *decoder) str(v *yaml.Node, path string) string {
	if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
		d.errorf(v, path, "want a string, got %s", show(v))
		return ""
	}
	return v.Value
}

func (d *decoder) int(v *yaml.Node, path string) int64 {
	var i int64
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&i) != nil || i < 0 {
		d.errorf(v, path, "want a non-negative integer, got %s", show(v))
		return 0
	}
	return i
}

func (d *decoder) bool(v *yaml.Node, path string) bool {
	var b bool
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&b) != nil {
		d.errorf(v, path, "want true or false, got %s", show(v))
	}
	return b
}

func (d *decoder) duration(v *yaml.Node, path string) time.Duration {
	if v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" {
		if t, err := time.ParseDuration(v.Value); err == nil && t >= 0 {
			return t
		}
	}
	d.errorf(v, path, `want a duration such as "2s" or "150ms", got %s`, show(v))
	return 0
}

// show describes a node for an error message.
func show(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "nothing"
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// nodeJSON writes n as JSON, keeping the order of mapping keys.
func nodeJSON(b *bytes.Buffer, n *yaml.Node) error {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a JSON key must be a string, got %s", k.Line, show(k))
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, k.Value)
			b.WriteByte(':')
			if err := nodeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := nodeJSON(b, item); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			b.WriteString("null")
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			j, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
			}
			b.Write(j)
		default: // strings, and timestamps kept as written
			writeJSON(b, n.Value)
		}
	default:
		return fmt.Errorf("line %d: cannot turn %s into JSON", n.Line, show(n))
	}
	return nil
}

func writeJSON(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)         // a string always encodes
	b.Truncate(b.Len() - 1) // Encode adds a newline
}
