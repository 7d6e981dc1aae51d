package config

import (
	"fmt"
	"strings"
)

// yaml.v3 reports a syntax error with the line where the construct it was
// parsing began, often the line before the mistake, and no column. For the
// two mistakes people make most in a config file, an unclosed { or [ and a
// key indented wrongly, locate finds the place itself by scanning the
// source; it reports ok false when it is not sure, and the caller keeps
// yaml's message.

// blockText tracks the lines of a block scalar (a value written | or >),
// whose text is not YAML to scan.
type blockText struct{ indent int } // the key's indentation; -1 outside

// skip reports whether line is inside the block scalar, and starts one
// after a line whose value is | or >.
func (b *blockText) skip(text string) bool {
	trimmed := strings.TrimLeft(text, " ")
	indent := len(text) - len(trimmed)
	if b.indent >= 0 {
		if trimmed == "" || indent > b.indent {
			return true
		}
		b.indent = -1
	}
	content := trimmed
	for strings.HasPrefix(content, "- ") {
		content = strings.TrimLeft(content[2:], " ")
	}
	if v, isKey := keyValue(content); isKey && (strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">")) {
		b.indent = indent
	}
	return false
}

// locateTab finds the first line indented with a tab, which YAML never
// allows (a tab may separate a value from its key, never indent). yaml.v3
// says "found character that cannot start any token" or speaks of "a tab
// character" on an earlier line (where the enclosing block began), which
// does not tell a person what to change. Lines of a block scalar (| or >)
// are skipped up to their indentation: the text after it may hold tabs.
func locateTab(src string) (line, col int, ok bool) {
	block := blockText{indent: -1}
	for n, text := range strings.Split(src, "\n") {
		indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
		i := strings.IndexByte(indent, '\t')
		if i < 0 {
			block.skip(text)
			continue
		}
		if block.indent >= 0 && i > block.indent {
			continue // inside a block scalar's text, past its indentation
		}
		return n + 1, i + 1, true
	}
	return 0, 0, false
}

// locateQuote finds the quote that opens a quoted value never closed: a
// quoted scalar may span lines, so it runs to the end of the file.
func locateQuote(src string) (line, col int, msg string, ok bool) {
	var q byte // the open quote, 0 outside one
	var qLine, qCol int
	block := blockText{indent: -1}
	for n, text := range strings.Split(src, "\n") {
		if q == 0 && block.skip(text) {
			continue
		}
		valueStart := true
		for i := 0; i < len(text); i++ {
			c := text[i]
			if q != 0 {
				switch {
				case q == '"' && c == '\\':
					i++
				case c == q && q == '\'' && i+1 < len(text) && text[i+1] == '\'':
					i++
				case c == q:
					q, valueStart = 0, false
				}
				continue
			}
			switch {
			case c == ' ' || c == '\t':
			case c == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t'):
				i = len(text)
			case (c == '"' || c == '\'') && valueStart:
				q, qLine, qCol = c, n+1, i+1
			case c == ':' && (i+1 == len(text) || text[i+1] == ' '), c == ',', c == '[', c == '{':
				valueStart = true
			case c == '-' && valueStart && (i+1 == len(text) || text[i+1] == ' '):
			default:
				valueStart = false
			}
		}
	}
	if q == 0 {
		return 0, 0, "", false
	}
	return qLine, qCol, fmt.Sprintf("the %c opened here is never closed", q), true
}

// locateUnclosed finds the { or [ that is never closed: the innermost
// flow collection still open at the end of the file, or the first closed
// by the wrong bracket.
func locateUnclosed(src string) (line, col int, msg string, ok bool) {
	type open struct {
		c         byte
		line, col int
	}
	var stack []open
	block := blockText{indent: -1}
	for n, text := range strings.Split(src, "\n") {
		if len(stack) == 0 && block.skip(text) {
			continue
		}
		valueStart := true // whether the next non-space byte starts a value
		for i := 0; i < len(text); i++ {
			c := text[i]
			switch {
			case c == ' ' || c == '\t':
				continue
			case c == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t'):
				i = len(text)
				continue
			case c == '"' || c == '\'':
				i = skipQuoted(text, i)
			case c == '{' || c == '[':
				if len(stack) > 0 || valueStart {
					stack = append(stack, open{c, n + 1, i + 1})
					valueStart = true
					continue
				}
			case c == '}' || c == ']':
				if len(stack) == 0 {
					break
				}
				top := stack[len(stack)-1]
				if want := closer(top.c); c != want {
					return top.line, top.col, fmt.Sprintf("the %c opened here is closed by %c at line %d, column %d; expected %c",
						top.c, c, n+1, i+1, want), true
				}
				stack = stack[:len(stack)-1]
			case c == ',' && len(stack) > 0:
				valueStart = true
				continue
			case c == ':' && (i+1 == len(text) || text[i+1] == ' '):
				valueStart = true
				continue
			case c == '-' && valueStart && (i+1 == len(text) || text[i+1] == ' '):
				continue // a list item: its value follows
			}
			valueStart = false
		}
	}
	if len(stack) == 0 {
		return 0, 0, "", false
	}
	top := stack[len(stack)-1]
	return top.line, top.col, fmt.Sprintf("the %c opened here is never closed: add %c", top.c, closer(top.c)), true
}

func closer(c byte) byte {
	if c == '{' {
		return '}'
	}
	return ']'
}

// skipQuoted returns the index of the quote that closes the string opened
// at text[i], or the last index when it is not closed on this line.
func skipQuoted(text string, i int) int {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch {
		case q == '"' && text[j] == '\\':
			j++
		case text[j] == q:
			if q == '\'' && j+1 < len(text) && text[j+1] == '\'' {
				j++ // '' is a quote inside a single-quoted string
				continue
			}
			return j
		}
	}
	return len(text) - 1
}

// locateIndent finds a line of a block mapping whose indentation is wrong:
// deeper than the line above although that line's key already has a value,
// or lining up with no key above it. It skips what it cannot follow (flow
// collections over several lines, block scalars), so it may find nothing.
func locateIndent(src string) (line, col int, msg string, ok bool) {
	var levels []indentLevel // the enclosing blocks, outermost first
	opens := false           // whether the previous line opened a block ("key:" or "- ")
	blockScalar := -1        // the indentation of the key whose | or > text is being skipped
	for n, text := range strings.Split(src, "\n") {
		trimmed := strings.TrimLeft(text, " ")
		indent := len(text) - len(trimmed)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasPrefix(trimmed, "\t") {
			return 0, 0, "", false // tabs: not followed
		}
		if blockScalar >= 0 {
			if indent > blockScalar {
				continue
			}
			blockScalar = -1
		}
		if strings.HasPrefix(trimmed, "---") || strings.HasPrefix(trimmed, "...") {
			levels, opens = nil, false
			continue
		}
		popped := false
		for len(levels) > 0 && levels[len(levels)-1].indent > indent {
			levels = levels[:len(levels)-1]
			popped = true
		}
		if _, isKey := keyValue(trimmed); !isKey && !strings.HasPrefix(trimmed, "- ") && trimmed != "-" &&
			len(levels) > 0 && levels[len(levels)-1].indent < indent && !opens {
			continue // a plain value going on over several lines
		}
		switch {
		case len(levels) == 0 || levels[len(levels)-1].indent < indent:
			if len(levels) > 0 && !opens {
				if popped {
					return n + 1, indent + 1, fmt.Sprintf("this line is indented %d spaces, which lines up with no key above it (%s)",
						indent, indents(levels)), true
				}
				above := levels[len(levels)-1]
				return n + 1, indent + 1, fmt.Sprintf("this line is indented deeper than line %d, whose key already has a value", above.line), true
			}
			levels = append(levels, indentLevel{indent, n + 1})
		default:
			levels[len(levels)-1].line = n + 1
		}
		content := trimmed
		for strings.HasPrefix(content, "- ") { // "- key: v" opens a mapping two columns in
			content = strings.TrimLeft(content[2:], " ")
			in := len(text) - len(content)
			levels = append(levels, indentLevel{in, n + 1})
		}
		value, isKey := keyValue(content)
		switch {
		case strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">"):
			blockScalar, opens = indent, false
		case strings.HasPrefix(value, "{") || strings.HasPrefix(value, "["):
			if _, _, _, open := locateUnclosed(value); open {
				return 0, 0, "", false // a flow collection over several lines: not followed
			}
			opens = false
		case strings.HasPrefix(value, "\"") || strings.HasPrefix(value, "'"):
			if _, _, _, open := locateQuote(value); open {
				return 0, 0, "", false // a quoted value over several lines: not followed
			}
			opens = false
		default:
			// An anchor or a tag alone ("key: &base") still opens a block.
			bare := value == "" || !strings.ContainsRune(value, ' ') && (strings.HasPrefix(value, "&") || strings.HasPrefix(value, "!"))
			opens = (isKey && bare) || content == "-"
		}
	}
	return 0, 0, "", false
}

// keyValue splits "key: value" (or "key:") and returns the value with its
// comment removed; isKey is false for a line that is not a key.
func keyValue(s string) (value string, isKey bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\'':
			if i == 0 {
				i = skipQuoted(s, i)
			}
		case c == '#' && i > 0 && s[i-1] == ' ':
			return "", false
		case c == ':' && (i+1 == len(s) || s[i+1] == ' '):
			v := strings.TrimSpace(s[i+1:])
			if strings.HasPrefix(v, "#") {
				v = ""
			} else if j := strings.Index(v, " #"); j >= 0 {
				v = strings.TrimSpace(v[:j])
			}
			return v, true
		}
	}
	return "", false
}

// indentLevel is a block's indentation and the last line seen at it.
type indentLevel struct{ indent, line int }

func indents(levels []indentLevel) string {
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = fmt.Sprintf("%d", l.indent)
	}
	return "keys above are indented " + strings.Join(parts, ", ")
}
