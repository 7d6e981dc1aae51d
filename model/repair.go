package model

import (
	"bytes"
	"encoding/json"
)

// RepairArguments makes a tool call's arguments valid JSON where that is
// safe, and reports whether it changed them. Safe means the intent is not
// in doubt:
//   - empty or blank arguments become {} (a call without arguments);
//   - a complete JSON value followed by nothing but blanks and stray
//     closing brackets keeps the value;
//   - when the reply was not cut short (finish is not FinishLength), an
//     object or array missing only its closing brackets, with every
//     string closed and no dangling ',' or ':', is closed.
//
// Anything else is returned unchanged, and stays invalid: arguments cut
// off by max_tokens, or garbled, are never guessed at. Valid arguments are
// returned unchanged.
func RepairArguments(args []byte, finish FinishReason) ([]byte, bool) {
	if json.Valid(args) {
		return args, false
	}
	t := bytes.TrimSpace(args)
	if len(t) == 0 {
		return []byte("{}"), true
	}
	if t[0] != '{' && t[0] != '[' {
		return args, false
	}
	var stack []byte
	inStr, esc := false, false
	for i, c := range t {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			stack = append(stack, c)
		case c == '}' || c == ']':
			if len(stack) == 0 {
				return args, false
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				// The first value ends here: keep it if only stray
				// closers follow.
				v, rest := t[:i+1], t[i+1:]
				if len(bytes.Trim(rest, " \t\r\n}]")) == 0 && json.Valid(v) {
					return bytes.Clone(v), true
				}
				return args, false
			}
		}
	}
	if inStr || finish == FinishLength || len(stack) == 0 {
		return args, false
	}
	switch t[len(t)-1] {
	case ',', ':':
		return args, false
	}
	fixed := bytes.Clone(t)
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '{' {
			fixed = append(fixed, '}')
		} else {
			fixed = append(fixed, ']')
		}
	}
	if !json.Valid(fixed) {
		return args, false
	}
	return fixed, true
}
