// Package costexpr reads a cost expression (pace's --cost): a template of
// placeholders such as {2}, {len} or {body-len}, expanded for each item,
// then integer arithmetic with + - * / and parentheses, / rounding up.
package costexpr

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pace-cli/pace/internal/tmpl"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// A cost expression (--cost) gives each item its cost under cost rules:
// a template (placeholders such as {2} or {len}), expanded for the item,
// then read as integer arithmetic with + - * / and parentheses, / rounding
// up. So --cost 1000, --cost '{2}' with --colsep, --cost '{len}/4' (about
// a token per four bytes) and, for pace fetch, --cost '{body-len}/4' (the
// request body's bytes) all work. The result must be a whole number of at
// least 1: anything else fails the item before it is admitted.

// Expr is a parsed cost expression.
type Expr struct {
	src  string
	t    *tmpl.Template
	body bool // uses {body-len}
}

// bodyLen is the placeholder for the request body's length (pace fetch).
const bodyLen = "{body-len}"

// Parse parses a cost expression. A constant is checked at once, and so
// is an expression that would fail for every item ({len}/0).
func Parse(s string) (*Expr, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("want a cost such as 1000, {2}, {len}/4 or {body-len}/4")
	}
	c := &Expr{src: s, body: strings.Contains(s, bodyLen)}
	c.t = tmpl.Parse(strings.ReplaceAll(s, bodyLen, "\x00"))
	// A constant must be good already: check it now, not per item.
	if !c.t.HasPlaceholder() && !c.body {
		if _, err := evalCost(s); err != nil {
			return nil, err
		}
	} else if err := c.checkShape(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkShape returns why c fails for every item, if it does: its
// arithmetic fails ({len}/0, {len}*) with every placeholder standing for
// a number, whichever. A result below 1 depends on the item, and is
// found per item.
func (c *Expr) checkShape() error {
	var first error
	for _, v := range []string{"1", "22"} {
		var cols []string
		if n := c.t.MaxColumn(); n > 1 {
			cols = slices.Repeat([]string{v}, n)
		}
		s, err := c.t.Expand(tmpl.Values{Item: v, Columns: cols, Seq: 1, Slot: 1})
		if err != nil {
			return nil // not arithmetic on numbers: found per item
		}
		if _, err := parseArith(strings.ReplaceAll(s, "\x00", v)); err == nil {
			return nil
		} else if first == nil {
			first = err
		}
	}
	return fmt.Errorf("it fails for every item (%v): want a whole number or arithmetic such as 1200/4 or {len}/4", first)
}

// String returns the expression as given.
func (c *Expr) String() string { return c.src }

// MaxColumn returns the highest column the expression names ({2}: 2), 0
// for none.
func (c *Expr) MaxColumn() int { return c.t.MaxColumn() }

// cost returns job's cost; body is the request body's length for
// {body-len}. Its errors say what is wrong with the item's cost.
func (c *Expr) cost(job *runner.Job, body int64) (int, error) {
	s, err := c.t.Expand(tmpl.Values{Item: job.Item, Columns: job.Cols, Seq: job.Seq, Slot: job.Slot})
	if err != nil {
		return 0, err
	}
	s = strings.ReplaceAll(s, "\x00", strconv.FormatInt(body, 10))
	return evalCost(s)
}

// parseArith evaluates integer arithmetic, whatever its value.
func parseArith(s string) (int64, error) {
	p := &costParser{s: s}
	v, err := p.expr()
	if err == nil {
		p.space()
		if p.i < len(p.s) {
			err = fmt.Errorf("unexpected %q", p.s[p.i:])
		}
	}
	return v, err
}

// evalCost evaluates a cost's arithmetic: a positive whole number.
func evalCost(s string) (int, error) {
	v, err := parseArith(s)
	if err != nil && !errors.Is(err, errTooLarge) {
		return 0, fmt.Errorf("cost %q: want a whole number or arithmetic such as 1200/4 (%v)", s, err)
	}
	if err != nil || v > throttle.MaxLimit {
		return 0, fmt.Errorf("cost %q is too large: want a whole number from 1 to %d", s, int64(throttle.MaxLimit))
	}
	if v < 1 {
		return 0, fmt.Errorf("cost %q is %d: want a whole number from 1 to %d", s, v, int64(throttle.MaxLimit))
	}
	return int(v), nil
}

// costParser reads integer arithmetic: expr = term {(+|-) term},
// term = factor {(*|/) factor}, factor = number | ( expr ).
type costParser struct {
	s string
	i int
}

func (p *costParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *costParser) expr() (int64, error) {
	v, err := p.term()
	for err == nil {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '+' && p.s[p.i] != '-' {
			break
		}
		op := p.s[p.i]
		p.i++
		var w int64
		if w, err = p.term(); err == nil {
			if op == '+' {
				v, err = checked(float64(v) + float64(w))
			} else {
				v -= w
			}
		}
	}
	return v, err
}

func (p *costParser) term() (int64, error) {
	v, err := p.factor()
	for err == nil {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '*' && p.s[p.i] != '/' {
			break
		}
		op := p.s[p.i]
		p.i++
		var w int64
		if w, err = p.factor(); err != nil {
			break
		}
		switch {
		case op == '*':
			v, err = checked(float64(v) * float64(w))
		case w == 0:
			err = errors.New("division by zero")
		default:
			v = int64(math.Ceil(float64(v) / float64(w)))
		}
	}
	return v, err
}

func (p *costParser) factor() (int64, error) {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '(' {
		p.i++
		v, err := p.expr()
		p.space()
		if err == nil && (p.i >= len(p.s) || p.s[p.i] != ')') {
			err = errors.New("missing )")
		}
		p.i++
		return v, err
	}
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if start == p.i {
		if p.i < len(p.s) {
			return 0, fmt.Errorf("unexpected %q", p.s[p.i:])
		}
		return 0, errors.New("a number is missing")
	}
	v, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	if err != nil {
		return 0, errTooLarge // only digits: past an int64
	}
	return v, nil
}

// errTooLarge is a cost past throttle.MaxLimit, or a number in it past
// what an int64 holds.
var errTooLarge = errors.New("too large")

// checked returns v if it fits a cost, else an error.
func checked(v float64) (int64, error) {
	if v > throttle.MaxLimit {
		return 0, errTooLarge
	}
	return int64(v), nil
}

// Executor wraps an executor: its Prepare also sets each job's cost, and
// fails a job whose cost is not a positive whole number or could never
// fit one of the cost rules Rules, before it is admitted. Body, if set,
// returns the request body's length for {body-len}.
type Executor struct {
	runner.Executor
	Expr  *Expr
	Body  func(job *runner.Job) (int64, error) // the request body's length; nil for none
	Rules []throttle.Rule
}

// Prepare prepares the job and sets its cost.
func (c Executor) Prepare(job *runner.Job) error {
	if err := c.Executor.Prepare(job); err != nil {
		return err
	}
	var body int64
	if c.Expr.body && c.Body != nil {
		n, err := c.Body(job)
		if err != nil {
			return runner.Permanent(fmt.Errorf("job %d: %w", job.Seq, err))
		}
		body = n
	}
	cost, err := c.Expr.cost(job, body)
	if err != nil {
		return runner.Permanent(fmt.Errorf("job %d: %w", job.Seq, err))
	}
	if m := throttle.MaxCost(c.Rules); m > 0 && cost > m {
		return runner.Permanent(fmt.Errorf("job %d: cost %d is more than the cost rule allows in a window (%d): it could never be admitted", job.Seq, cost, m))
	}
	job.Cost = cost
	return nil
}
