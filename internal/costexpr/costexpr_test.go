package costexpr

import (
	"strings"
	"testing"

	"github.com/pace-cli/pace/runner"
)

func TestCost(t *testing.T) {
	for _, tt := range []struct {
		expr, item string
		cols       []string
		body       int64
		want       int
		wantErr    string
	}{
		{expr: "1000", want: 1000},
		{expr: "{len}/4", item: "abcdefghij", want: 3}, // 10/4 rounds up
		{expr: "{2}", item: "a,7", cols: []string{"a", "7"}, want: 7},
		{expr: "{body-len}/4+1", body: 8, want: 3},
		{expr: "(1+2)*3", want: 9},
		{expr: "{}", item: "lots", wantErr: `cost "lots": want a whole number`},
		{expr: "{}", item: "0", wantErr: `cost "0" is 0: want a whole number from 1`},
		{expr: "{}", item: "99999999999999999999", wantErr: `cost "99999999999999999999" is too large: want a whole number from 1 to 1099511627776`},
		{expr: "{}*{}", item: "4000000000", wantErr: `cost "4000000000*4000000000" is too large: want a whole number from 1 to 1099511627776`},
		{expr: "{}", item: "1099511627777", wantErr: `cost "1099511627777" is too large: want a whole number from 1 to 1099511627776`},
		{expr: "{}-5", item: "3", wantErr: "is -2"},
	} {
		c, err := Parse(tt.expr)
		if err != nil {
			t.Fatalf("Parse(%q) = %v", tt.expr, err)
		}
		got, err := c.cost(&runner.Job{Item: tt.item, Cols: tt.cols, Seq: 1, Slot: 1}, tt.body)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q for %q = %d, %v; want an error containing %q", tt.expr, tt.item, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q for %q = %d, %v; want %d", tt.expr, tt.item, got, err, tt.want)
		}
	}
}

// Expressions that fail whatever the item are refused when parsed.
func TestParseRefuses(t *testing.T) {
	for _, s := range []string{"", "  ", "5*", "{len}/0", "{len}*", "0", "1/0", "(1", "99999999999999999999"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = nil error, want a refusal", s)
		}
	}
}

// The arithmetic never panics, and a value it accepts is a cost from 1 to
// throttle.MaxLimit.
func FuzzEvalCost(f *testing.F) {
	for _, s := range []string{"1", "1200/4", "(1+2)*3", "2*(3+", "99999999999*99999999999", "1-2", "))", "0/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := evalCost(s)
		if err == nil && (v < 1 || v > 1<<40) {
			t.Errorf("evalCost(%q) = %d, want an error or a cost from 1 to 2^40", s, v)
		}
		if c, err := Parse(s); err == nil && c.String() != s {
			t.Errorf("Parse(%q).String() = %q", s, c.String())
		}
	})
}
