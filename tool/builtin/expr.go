package builtin

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is the calculator's arithmetic: a tokenizer, a recursive-descent
// parser that builds a small tree, and an evaluator. Parsing completes
// before evaluation, so a syntax error is reported even when an earlier
// part of the expression would fail to evaluate.
//
// Grammar, loosest binding first:
//
//	expression = sum EOF
//	sum        = product { ("+" | "-") product }
//	product    = unary { ("*" | "/" | "%") unary }
//	unary      = ("+" | "-") unary | power
//	power      = primary [ "^" unary ]            right-associative
//	primary    = number | name | name "(" [ sum { "," sum } ] ")" | "(" sum ")"
//
// So -2^2 is -4, 2^3^2 is 512, and 2^-1 is 0.5. Positions in messages
// count characters from 1.

const (
	maxExprLen = 1000 // characters
	maxDepth   = 100  // nesting of parentheses, calls, signs and powers
)

// exprError is a failure to parse or evaluate an expression.
type exprError struct {
	pos int // 1-based character position; 0 when it is about the whole expression
	msg string
}

func (e *exprError) Error() string {
	if e.pos == 0 {
		return e.msg
	}
	return fmt.Sprintf("%s at position %d", e.msg, e.pos)
}

func errorAt(pos int, format string, args ...any) error {
	return &exprError{pos: pos, msg: fmt.Sprintf(format, args...)}
}

// evaluate parses and evaluates src.
func evaluate(src string) (float64, error) {
	if n := utf8.RuneCountInString(src); n > maxExprLen {
		return 0, &exprError{msg: fmt.Sprintf("expression is %d characters long; the limit is %d", n, maxExprLen)}
	}
	toks, err := tokenize(src)
	if err != nil {
		return 0, err
	}
	p := &parser{toks: toks}
	if p.peek().kind == tokEOF {
		return 0, &exprError{msg: "empty expression"}
	}
	x, err := p.parseSum()
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEOF {
		if t.kind == tokRParen {
			return 0, errorAt(t.pos, "unbalanced parentheses: ')' without a matching '('")
		}
		return 0, errorAt(t.pos, "unexpected %s after a complete expression", t)
	}
	return x.eval()
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokName
	tokOp // + - * / % ^
	tokLParen
	tokRParen
	tokComma
)

type token struct {
	kind tokKind
	pos  int
	text string  // as written
	num  float64 // tokNum
	op   byte    // tokOp, normalized: '×' is '*', '÷' is '/', '**' is '^'
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return "number " + t.text
	case tokName:
		return "name " + strconv.Quote(t.text)
	}
	return strconv.Quote(t.text)
}

func tokenize(src string) ([]token, error) {
	var toks []token
	pos := 0 // characters consumed
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRuneInString(src[i:])
		pos++
		start, startPos := i, pos
		switch {
		case unicode.IsSpace(r):
			i += size
		case isDigit(r) || r == '.' && i+1 < len(src) && isDigit(rune(src[i+1])):
			j := scanNumber(src, i)
			text := src[i:j]
			v, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return nil, errorAt(startPos, "number %s is out of range", text)
			}
			toks = append(toks, token{kind: tokNum, pos: startPos, text: text, num: v})
			pos += j - i - 1 // numbers are ASCII
			i = j
		case r == '_' || unicode.IsLetter(r):
			j := i + size
			for j < len(src) {
				r, size := utf8.DecodeRuneInString(src[j:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				j += size
				pos++
			}
			toks = append(toks, token{kind: tokName, pos: startPos, text: src[i:j]})
			i = j
		default:
			t := token{pos: startPos, kind: tokOp, text: string(r)}
			i += size
			switch r {
			case '+', '/', '%', '^':
				t.op = byte(r)
			case '-', '−': // U+2212 MINUS SIGN
				t.op = '-'
			case '*':
				t.op = '*'
				if i < len(src) && src[i] == '*' { // Python's power operator
					t.op, t.text = '^', "**"
					i++
					pos++
				}
			case '×', '·':
				t.op = '*'
			case '÷':
				t.op = '/'
			case '(':
				t.kind = tokLParen
			case ')':
				t.kind = tokRParen
			case ',':
				t.kind = tokComma
			default:
				return nil, errorAt(startPos, "unexpected character %q", src[start:i])
			}
			toks = append(toks, t)
		}
	}
	return append(toks, token{kind: tokEOF, pos: pos + 1}), nil
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' }

// scanNumber returns the end of the number that starts at s[i]: digits,
// an optional fraction, an optional exponent.
func scanNumber(s string, i int) int {
	for i < len(s) && isDigit(rune(s[i])) {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(rune(s[i])) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(rune(s[j])) { // else the e is not an exponent
			for i = j; i < len(s) && isDigit(rune(s[i])); i++ {
			}
		}
	}
	return i
}

// node is a parsed expression.
type node interface {
	eval() (float64, error)
}

type (
	numNode   float64
	unaryNode struct {
		x node // the sign is always minus; unary plus is dropped
	}
	binaryNode struct {
		op   byte
		pos  int // of the operator
		l, r node
	}
	callNode struct {
		fn   *function
		pos  int // of the name
		args []node
	}
)

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) isOp(ops string) bool {
	t := p.peek()
	return t.kind == tokOp && strings.IndexByte(ops, t.op) >= 0
}

func (p *parser) parseSum() (node, error) {
	x, err := p.parseProduct()
	if err != nil {
		return nil, err
	}
	for p.isOp("+-") {
		op := p.next()
		y, err := p.parseProduct()
		if err != nil {
			return nil, err
		}
		x = &binaryNode{op: op.op, pos: op.pos, l: x, r: y}
	}
	return x, nil
}

func (p *parser) parseProduct() (node, error) {
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for p.isOp("*/%") {
		op := p.next()
		y, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		x = &binaryNode{op: op.op, pos: op.pos, l: x, r: y}
	}
	return x, nil
}

func (p *parser) parseUnary() (node, error) {
	p.depth++ // 1 at the top level, one more per enclosing (, call, sign or ^
	defer func() { p.depth-- }()
	if p.depth > maxDepth+1 {
		return nil, errorAt(p.peek().pos, "expression nests deeper than %d levels", maxDepth)
	}
	if p.isOp("+-") {
		op := p.next()
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		if op.op == '+' {
			return x, nil
		}
		return &unaryNode{x: x}, nil
	}
	return p.parsePower()
}

func (p *parser) parsePower() (node, error) {
	x, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	if p.isOp("^") {
		op := p.next()
		y, err := p.parseUnary() // right-associative, and the exponent may have a sign
		if err != nil {
			return nil, err
		}
		x = &binaryNode{op: '^', pos: op.pos, l: x, r: y}
	}
	return x, nil
}

func (p *parser) parsePrimary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokNum:
		return numNode(t.num), nil
	case tokName:
		return p.parseName(t)
	case tokLParen:
		x, err := p.parseSum()
		if err != nil {
			return nil, err
		}
		if err := p.closeParen(t); err != nil {
			return nil, err
		}
		return x, nil
	case tokEOF:
		return nil, errorAt(t.pos, "unexpected end of expression: expected a number, a name or '('")
	case tokRParen:
		return nil, errorAt(t.pos, "unexpected ')': expected a number, a name or '('")
	}
	return nil, errorAt(t.pos, "unexpected %s: expected a number, a name or '('", t)
}

// closeParen consumes the ')' that closes open.
func (p *parser) closeParen(open token) error {
	t := p.peek()
	if t.kind == tokRParen {
		p.next()
		return nil
	}
	if t.kind == tokEOF {
		return errorAt(open.pos, "unbalanced parentheses: '(' is never closed")
	}
	return errorAt(t.pos, "unexpected %s: expected ')'", t)
}

func (p *parser) parseName(name token) (node, error) {
	lower := strings.ToLower(name.text)
	if c, ok := constants[lower]; ok {
		if p.peek().kind == tokLParen {
			return nil, errorAt(name.pos, "%s is a constant, not a function", name.text)
		}
		return numNode(c), nil
	}
	fn := functions[lower]
	if fn == nil {
		return nil, errorAt(name.pos, "unknown name %q (constants: pi, e; functions: %s)", name.text, functionNames)
	}
	open := p.peek()
	if open.kind != tokLParen {
		return nil, errorAt(name.pos, "%s is a function: call it as %s(...)", name.text, lower)
	}
	p.next()
	var args []node
	if p.peek().kind != tokRParen {
		for {
			x, err := p.parseSum()
			if err != nil {
				return nil, err
			}
			args = append(args, x)
			if p.peek().kind != tokComma {
				break
			}
			p.next()
		}
	}
	if err := p.closeParen(open); err != nil {
		return nil, err
	}
	if len(args) < fn.minArgs || fn.maxArgs >= 0 && len(args) > fn.maxArgs {
		return nil, errorAt(name.pos, "%s takes %s, got %d", lower, fn.arity(), len(args))
	}
	return &callNode{fn: fn, pos: name.pos, args: args}, nil
}

var constants = map[string]float64{"pi": math.Pi, "π": math.Pi, "e": math.E}

type function struct {
	minArgs, maxArgs int // maxArgs < 0: any number
	// f computes the result; a non-empty problem means the arguments are
	// outside its domain.
	f func(args []float64) (v float64, problem string)
}

func (f *function) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs && f.minArgs == 1:
		return "1 argument"
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("%d arguments", f.minArgs)
	}
	return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
}

func fn1(f func(float64) float64) *function {
	return &function{minArgs: 1, maxArgs: 1, f: func(a []float64) (float64, string) { return f(a[0]), "" }}
}

const functionNames = "sqrt, abs, floor, ceil, round, min, max, pow, log, ln, exp, sin, cos, tan"

var functions = map[string]*function{
	"sqrt": {minArgs: 1, maxArgs: 1, f: func(a []float64) (float64, string) {
		if a[0] < 0 {
			return 0, "sqrt of a negative number"
		}
		return math.Sqrt(a[0]), ""
	}},
	"abs":   fn1(math.Abs),
	"floor": fn1(math.Floor),
	"ceil":  fn1(math.Ceil),
	"round": fn1(math.Round), // half away from zero
	"exp":   fn1(math.Exp),
	"sin":   fn1(math.Sin), // radians
	"cos":   fn1(math.Cos),
	"tan":   fn1(math.Tan),
	"min": {minArgs: 1, maxArgs: -1, f: func(a []float64) (float64, string) {
		m := a[0]
		for _, v := range a[1:] {
			m = math.Min(m, v)
		}
		return m, ""
	}},
	"max": {minArgs: 1, maxArgs: -1, f: func(a []float64) (float64, string) {
		m := a[0]
		for _, v := range a[1:] {
			m = math.Max(m, v)
		}
		return m, ""
	}},
	"pow": {minArgs: 2, maxArgs: 2, f: func(a []float64) (float64, string) { return power(a[0], a[1]) }},
	// log is base 10, or base a[1] when given; ln is natural.
	"log": {minArgs: 1, maxArgs: 2, f: func(a []float64) (float64, string) {
		if a[0] <= 0 {
			return 0, "log of a number <= 0"
		}
		if len(a) == 1 {
			return math.Log10(a[0]), ""
		}
		if a[1] <= 0 || a[1] == 1 {
			return 0, "log base must be > 0 and not 1"
		}
		return math.Log(a[0]) / math.Log(a[1]), ""
	}},
	"ln": {minArgs: 1, maxArgs: 1, f: func(a []float64) (float64, string) {
		if a[0] <= 0 {
			return 0, "ln of a number <= 0"
		}
		return math.Log(a[0]), ""
	}},
}

func power(x, y float64) (float64, string) {
	if x == 0 && y < 0 {
		return 0, "division by zero (0 to a negative power)"
	}
	if x < 0 && y != math.Trunc(y) {
		return 0, "negative number to a fractional power"
	}
	return math.Pow(x, y), ""
}

func (n numNode) eval() (float64, error) { return float64(n), nil }

func (n *unaryNode) eval() (float64, error) {
	x, err := n.x.eval()
	return -x, err
}

func (n *binaryNode) eval() (float64, error) {
	l, err := n.l.eval()
	if err != nil {
		return 0, err
	}
	r, err := n.r.eval()
	if err != nil {
		return 0, err
	}
	var v float64
	switch n.op {
	case '+':
		v = l + r
	case '-':
		v = l - r
	case '*':
		v = l * r
	case '/':
		if r == 0 {
			return 0, errorAt(n.pos, "division by zero")
		}
		v = l / r
	case '%':
		if r == 0 {
			return 0, errorAt(n.pos, "division by zero (modulo)")
		}
		v = math.Mod(l, r)
	case '^':
		var problem string
		if v, problem = power(l, r); problem != "" {
			return 0, errorAt(n.pos, "%s", problem)
		}
	}
	return finite(v, n.pos)
}

func (n *callNode) eval() (float64, error) {
	args := make([]float64, len(n.args))
	for i, a := range n.args {
		v, err := a.eval()
		if err != nil {
			return 0, err
		}
		args[i] = v
	}
	v, problem := n.fn.f(args)
	if problem != "" {
		return 0, errorAt(n.pos, "%s", problem)
	}
	return finite(v, n.pos)
}

// finite rejects results JSON cannot carry: infinities and NaN.
func finite(v float64, pos int) (float64, error) {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errorAt(pos, "result is too large (overflow)")
	}
	return v, nil
}
