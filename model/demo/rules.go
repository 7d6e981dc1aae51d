package demo

import (
	"regexp"
	"strconv"
	"strings"
)

// symbols maps the arithmetic signs people type to the ASCII ones a
// calculator reads.
var symbols = strings.NewReplacer("×", "*", "÷", "/", "−", "-", "–", "-")

// percentOf finds "10% of 250" and "10 percent of 250".
var percentOf = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(?:%|percent)\s+of\s+(\d+(?:\.\d+)?)`)

// normalise writes × ÷ and − as * / and -, and "X% of Y" as X/100*Y (the
// calculator's % is the remainder).
func normalise(text string) string {
	return percentOf.ReplaceAllString(symbols.Replace(text), "$1/100*$2")
}

// functions are the calculator's functions of one argument the demo model
// recognises in a question ("sqrt(16)"); pi is its constant.
var functions = map[string]bool{
	"sqrt": true, "abs": true, "floor": true, "ceil": true, "round": true,
	"log": true, "ln": true, "exp": true, "sin": true, "cos": true, "tan": true,
}

// expression returns the longest arithmetic expression in text, such as
// "21*2+5" in "what is 21*2+5?", normalised (see normalise). Numbers may
// have an exponent (1e308); sqrt(16) and the other one-argument functions
// count as operations. It returns "" when text holds no expression with at
// least one operation.
func expression(text string) string {
	text = normalise(text)
	best := ""
	start := -1
	for i := 0; i <= len(text); {
		if n := i; n < len(text) {
			if l := exprToken(text, n); l > 0 {
				if start < 0 {
					start = i
				}
				i += l
				continue
			}
		}
		if start >= 0 {
			if e := clean(text[start:i]); len(e) > len(best) && valid(e) {
				best = e
			}
			start = -1
		}
		i++
	}
	return best
}

// exprToken returns the length of the expression token that starts at
// text[i]: a number (with its exponent), an operator, a parenthesis, a
// space, pi, or a function name followed by "(". It returns 0 for
// anything else, and for letters inside a word.
func exprToken(text string, i int) int {
	c := text[i]
	switch {
	case isDigit(c) || c == '.':
		return numberLen(text[i:])
	case strings.IndexByte(" +-*/^()", c) >= 0:
		return 1
	case isLetter(c):
		if i > 0 && (isLetter(text[i-1]) || isDigit(text[i-1])) {
			return 0
		}
		j := i
		for j < len(text) && isLetter(text[j]) {
			j++
		}
		w := strings.ToLower(text[i:j])
		if w == "pi" {
			return j - i
		}
		if functions[w] && strings.HasPrefix(strings.TrimLeft(text[j:], " "), "(") {
			return j - i
		}
	}
	return 0
}

// numberLen returns the length of the number at the start of s: digits
// and dots, then an exponent (e or E, an optional sign, digits) if one
// follows.
func numberLen(s string) int {
	j := 0
	for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
		j++
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

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
// operation (a binary operator or a function): numbers, pi, + - * / ^,
// unary minus, parentheses and functions of one argument.
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
			n := numberLen(s[i:])
			mantissa := s[i : i+n]
			if e := strings.IndexAny(mantissa, "eE"); e >= 0 {
				mantissa = mantissa[:e]
			}
			if strings.Count(mantissa, ".") > 1 || strings.Trim(mantissa, ".") == "" {
				return false
			}
			operand, i = true, i+n
		case isLetter(c):
			j := i
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			w := strings.ToLower(s[i:j])
			switch {
			case operand:
				return false
			case w == "pi":
				operand = true
			case functions[w] && strings.HasPrefix(strings.TrimLeft(s[j:], " "), "("):
				ops++ // the "(" that follows is checked as any other
			default:
				return false
			}
			i = j
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

// askMe returns the question of "ask me: QUESTION", which the demo model
// asks the person with the ask_user tool.
func askMe(text string) (string, bool) {
	t := strings.TrimSpace(text)
	if len(t) < 7 || !strings.EqualFold(t[:7], "ask me:") {
		return "", false
	}
	q := strings.TrimSpace(t[7:])
	return q, q != ""
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

// maxRepeat is the most times "repeat N times:" repeats a call.
const maxRepeat = 50

// repeat returns N and the request of "repeat N times: REQUEST".
func repeat(text string) (n int, rest string, ok bool) {
	t := strings.TrimSpace(text)
	head, rest, found := strings.Cut(t, ":")
	if !found {
		return 0, "", false
	}
	f := strings.Fields(strings.ToLower(head))
	if len(f) != 3 || f[0] != "repeat" || f[2] != "times" {
		return 0, "", false
	}
	n, err := strconv.Atoi(f[1])
	rest = strings.TrimSpace(rest)
	if err != nil || n < 1 || rest == "" {
		return 0, "", false
	}
	return min(n, maxRepeat), rest, true
}

// delegation returns the agent and the task of "ask NAME: TASK" (NAME not
// "me": that asks the person).
func delegation(text string) (name, task string, ok bool) {
	t := strings.TrimSpace(text)
	head, task, found := strings.Cut(t, ":")
	if !found {
		return "", "", false
	}
	f := strings.Fields(head)
	if len(f) != 2 || !strings.EqualFold(f[0], "ask") || strings.EqualFold(f[1], "me") {
		return "", "", false
	}
	task = strings.TrimSpace(task)
	return f[1], task, task != ""
}
