package builtin

import (
	"context"
	"math"
	"strconv"

	"github.com/agentrt/agentrt/tool"
)

type calculatorIn struct {
	Expression string `json:"expression" jsonschema:"the arithmetic expression to evaluate, such as (2+3)*4 or sqrt(2)^2"`
}

type calculatorOut struct {
	Expression string  `json:"expression"`
	Result     float64 `json:"result"`
}

const calculatorDescription = `Evaluates an arithmetic expression exactly as written and returns its value. ` +
	`Use it for any arithmetic rather than computing in your head. ` +
	`Supports numbers (42, 3.14, 1.5e3), + - * / % (remainder) and ^ (power, right-associative; ** also works), ` +
	`unary minus, parentheses, the constants pi and e, and the functions ` + functionNames + `. ` +
	`log is base 10 (log(x, b) is base b) and ln is natural; trigonometric functions take radians.`

// Calculator returns the "calculator" tool. It evaluates an arithmetic
// expression with a parser of its own: nothing is ever executed. Integral
// results print without a fraction ("21*2+5" gives 47); other results are
// rounded to 15 significant digits, so 0.1+0.2 gives 0.3. Failures
// (division by zero, an unknown name, unbalanced parentheses, an
// expression longer than 1000 characters or nested deeper than 100 levels)
// are tool errors whose message gives the position.
func Calculator() tool.Tool {
	return tool.Must(tool.New("calculator", calculatorDescription, calculate))
}

func calculate(_ context.Context, in calculatorIn) (calculatorOut, error) {
	v, err := evaluate(in.Expression)
	if err != nil {
		return calculatorOut{}, err
	}
	return calculatorOut{Expression: in.Expression, Result: tidy(v)}, nil
}

// tidy rounds away binary floating-point noise from non-integral results,
// keeping 15 significant digits, and turns -0 into 0. Integers are exact
// up to 2^53 and left alone.
func tidy(v float64) float64 {
	if v == 0 {
		return 0
	}
	if v != math.Trunc(v) {
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 64)
	}
	return v
}
