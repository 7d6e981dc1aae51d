package demo

import (
	"strings"
)

// symbols maps the arithmetic signs people type to the ASCII ones a
// calculator reads.
var symbols = strings.NewReplacer("×", "*", "÷", "/", "−", "-", "–", "-")

// expression returns the longest arithmetic expression in text, such as
// "21*2+5" in "what is 21*2+5?", with × ÷ and − written * / and -.
// It returns "" when text holds no expression with at least one operator.
func expression(text string) string {
	text = symbols.Replace(text)
	best := ""
	start := -1
	for i := 0; i <= len(text); i++ {
		if i < len(text) && isExprByte(text[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if e := clean(text[start:i]); len(e) > len(best) && valid(e) {
				best = e
			}
			start = -1
		}
	}
	return best
}

func isExprByte(c byte) bool {
	return c >= '0' && c <= '9' || strings.IndexByte(" .+-*/^()", c) >= 0
}

// clean trims what ends a sentence or belongs to the words around an
// expression: spaces, a final full stop or operator, unmatched parentheses.
func clean(s string) string {
	for {
		t := strings.TrimSpace(s)
		t = strings.TrimRight(t, ".+-*/^(")
		t = strings.TrimLeft(t, "+*/^)")
		if strings.HasPrefix(t, ".") && (len(t) < 2 || !isDigit(t[1])) {
			t = t[1:]
		}
		if strings.HasPrefix(t, "-") && (len(t) < 2 || !isOperandStart(t[1])) {
			t = t[1:]
		}
		open, closed := strings.Count(t, "("), strings.Count(t, ")")
		switch {
		case open > closed && strings.HasPrefix(t, "("):
			t = t[1:]
		case closed > open && strings.HasSuffix(t, ")"):
			t = t[:len(t)-1]
		}
		if t == s {
			return t
		}
		s = t
	}
}

func isOperandStart(c byte) bool { return isDigit(c) || c == '(' || c == '.' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// valid reports whether s is a well-formed expression with at least one
// binary operator: numbers, + - * / ^, unary minus and parentheses.
func valid(s string) bool {
	depth, ops := 0, 0
	operand := false // whether the last token was an operand
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case c >= '0' && c <= '9' || c == '.':
			if operand {
				return false // two numbers in a row
			}
			j, dots, digits := i, 0, 0
			for ; j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.'); j++ {
				if s[j] == '.' {
					dots++
				} else {
					digits++
				}
			}
			if dots > 1 || digits == 0 {
				return false
			}
			operand, i = true, j
		case c == '(':
			if operand {
				return false
			}
			depth++
			i++
		case c == ')':
			if !operand || depth == 0 {
				return false
			}
			depth--
			i++
		case c == '-' && !operand:
			i++ // unary minus
		default: // a binary operator
			if !operand {
				return false
			}
			ops++
			operand = false
			i++
		}
	}
	return operand && depth == 0 && ops > 0
}

// timePhrases are what people ask for the date or time.
var timePhrases = []string{
	"what time", "what's the time", "whats the time", "the time now", "current time",
	"time is it", "tell me the time", "time right now", "local time",
	"what date", "what's the date", "whats the date", "the date today", "today's date",
	"todays date", "current date", "date is it", "date today",
	"what day", "which day", "day is it", "day of the week", "day today",
}

// asksTime reports whether text asks for the date or time.
func asksTime(text string) bool {
	text = strings.ToLower(strings.ReplaceAll(text, "’", "'"))
	for _, p := range timePhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}
