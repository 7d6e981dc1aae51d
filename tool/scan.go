package tool

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds a minimal scanner over JSON text that is already known to
// be valid (json.Valid said so). It never decodes more than it must, so the
// schema checks in node.check cost no allocations on valid arguments.

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// endString returns the index just past the string that starts at b[i]
// (a '"'), and whether the string holds escapes.
func endString(b []byte, i int) (end int, escaped bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return len(b), escaped
}

// endNumber returns the index just past the number that starts at b[i].
func endNumber(b []byte, i int) int {
	for i < len(b) {
		switch c := b[i]; {
		case '0' <= c && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the index just past the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _ := endString(b, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i, _ = endString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	default:
		return endNumber(b, i)
	}
}

// unquote decodes the JSON string literal q (quotes included).
func unquote(q []byte) string {
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return string(q)
	}
	return s
}

// stringValue returns the contents of the JSON string literal q: a view of
// q when it holds no escapes, a decoded copy when it does.
func stringValue(q []byte, escaped bool) []byte {
	if escaped {
		return []byte(unquote(q))
	}
	return q[1 : len(q)-1]
}

// parseNumber parses a JSON number literal.
func parseNumber(lit []byte) (float64, error) {
	return strconv.ParseFloat(string(lit), 64)
}

// pathTo renders the path from the top of b to the value that starts at
// offset target, like a.b[2]["odd key"].
func pathTo(b []byte, target int) string {
	var sb strings.Builder
	i := skipWS(b, 0)
	for i < target {
		var open byte = b[i]
		if open != '{' && open != '[' {
			break
		}
		i++
		for index := 0; ; index++ {
			i = skipWS(b, i)
			if b[i] == '}' || b[i] == ']' {
				return sb.String() // not found; cannot happen for a valid target
			}
			if b[i] == ',' {
				i = skipWS(b, i+1)
			}
			var key []byte
			if open == '{' {
				keyEnd, _ := endString(b, i)
				key = b[i:keyEnd]
				i = skipWS(b, skipWS(b, keyEnd)+1)
			}
			end := skipValue(b, i)
			if target < i || target >= end {
				i = end
				continue
			}
			if open == '[' {
				sb.WriteByte('[')
				sb.WriteString(strconv.Itoa(index))
				sb.WriteByte(']')
			} else {
				appendKey(&sb, unquote(key))
			}
			break
		}
	}
	return sb.String()
}

func appendKey(sb *strings.Builder, k string) {
	switch {
	case isIdent(k) && sb.Len() == 0:
		sb.WriteString(k)
	case isIdent(k):
		sb.WriteByte('.')
		sb.WriteString(k)
	default:
		sb.WriteByte('[')
		sb.WriteString(strconv.Quote(k))
		sb.WriteByte(']')
	}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// preview returns a short quotable prefix of b for messages: at most 40
// bytes, cut on a rune boundary, with "..." when cut.
func preview(b []byte) string {
	const max = 40
	s := strings.TrimSpace(string(b))
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
