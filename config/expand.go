package config

import (
	"fmt"
	"strings"
)

// expand replaces ${VAR} with the variable's value and ${VAR:-default}
// with the value, or default when VAR is unset or empty. $$ is a literal $;
// any other $ is kept as is, so "pa$word" needs no escaping. It returns the
// variables that were unset, had no default and so expanded to "".
func expand(s string, env func(string) (string, bool)) (out string, unset []string, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			return b.String(), unset, nil
		}
		b.WriteString(s[:i])
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			s = s[i+2:]
		case '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", nil, fmt.Errorf("unterminated %q: close it with } or write $$ for a literal $", s[i:])
			}
			ref := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(ref, ":-")
			if !validVarName(name) {
				return "", nil, fmt.Errorf("bad variable reference %q: want ${NAME} or ${NAME:-default}", s[i:i+end+1])
			}
			v, ok := env(name)
			switch {
			case hasDef && v == "":
				v = def
			case !ok:
				unset = append(unset, name)
			}
			b.WriteString(v)
			s = s[i+end+1:]
		default:
			b.WriteByte('$')
			s = s[i+1:]
		}
	}
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
