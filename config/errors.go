package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/editdist"
)

// Problem is one thing wrong with a config, at the place it is written.
type Problem struct {
	File string
	// Line and Column count from 1; zero means unknown.
	Line, Column int
	// Path is the key path, e.g. "agents.assistant.limits.max_rounds"; see
	// Config.Pos.
	Path    string
	Message string
}

// String formats the problem as "file:line:col: path: message", leaving out
// the parts that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	if pos := (Position{File: p.File, Line: p.Line, Column: p.Column}).String(); pos != "" {
		b.WriteString(pos)
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is every problem found in a config, in file order. Load, Parse and
// the Check methods return an *Error for anything wrong with the config
// itself; use errors.As to get at the problems.
type Error struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// errorOf returns nil for no problems, else an *Error with the problems in
// file order; those without a line come last.
func errorOf(problems []Problem) error {
	if len(problems) == 0 {
		return nil
	}
	slices.SortStableFunc(problems, func(a, b Problem) int {
		if c := cmp.Compare(a.File, b.File); c != 0 {
			return c
		}
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return &Error{Problems: problems}
}

// suggest returns ", did you mean X?" for the candidate closest to s, or ""
// when none is close enough to be a likely typo.
func suggest(s string, candidates []string) string {
	best, bestD := "", -1
	norm := func(x string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(x))
	}
	for _, c := range candidates {
		if norm(c) == norm(s) {
			return fmt.Sprintf("; did you mean %s?", c)
		}
		d := editdist.Distance(s, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD >= 0 && bestD <= max(1, len(s)/3) {
		return fmt.Sprintf("; did you mean %s?", best)
	}
	return ""
}
