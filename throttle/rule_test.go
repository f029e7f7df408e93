package throttle

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in   string
		want Rule
	}{
		{"10/s", Rule{N: 10, Window: time.Second}},
		{"500/m", Rule{N: 500, Window: time.Minute}},
		{"500/min", Rule{N: 500, Window: time.Minute}},
		{"3/h", Rule{N: 3, Window: time.Hour}},
		{"10000/d", Rule{N: 10000, Window: 24 * time.Hour}},
		{"10000/day", Rule{N: 10000, Window: 24 * time.Hour}},
		{"12/3s", Rule{N: 12, Window: 3 * time.Second}},
		{"5/500ms", Rule{N: 5, Window: 500 * time.Millisecond}},
		{"100/1m30s", Rule{N: 100, Window: 90 * time.Second}},
		{" 7 / sec ", Rule{N: 7, Window: time.Second}},
		{"1/2d12h", Rule{N: 1, Window: 60 * time.Hour}},
		{"2/hours", Rule{N: 2, Window: time.Hour}},
		{"cost:100/s", Rule{N: 100, Window: time.Second, Cost: true}},
		{" cost: 90000/min", Rule{N: 90000, Window: time.Minute, Cost: true}},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRule(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	tests := []struct {
		in, wantMsg string
	}{
		{"0/s", "at least 1"},
		{"-1/s", "at least 1"},
		{"5/0s", "longer than zero"},
		{"abc", "separated by '/'"},
		{"5/", "a period after '/'"},
		{"/s", "a limit before '/'"},
		{"10/fortnight", "a period such as"},
		{"99999999999999999999/s", "at most"},
		{"2000000000000/s", "at most"},
		{"1/99999999999d", "at most 100 years (36500d)"},
		{"1/36501d", "at most 100 years (36500d)"},
		{"1.5/s", "whole number"},
		{"5/s/s", "a period such as"},
		{"cost:", "separated by '/'"},
		{"cost:0/s", "at least 1"},
	}
	for _, tt := range tests {
		_, err := ParseRule(tt.in)
		if err == nil {
			t.Errorf("ParseRule(%q) succeeded, want error", tt.in)
			continue
		}
		if re := (*RuleError)(nil); !errors.As(err, &re) {
			t.Errorf("ParseRule(%q) error %v is not a *RuleError", tt.in, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+tt.in+`"`) || !strings.Contains(msg, tt.wantMsg) {
			t.Errorf("ParseRule(%q) error = %q; want it to quote the input and say %q", tt.in, msg, tt.wantMsg)
		}
	}
}

func TestParseRules(t *testing.T) {
	got, err := ParseRules("10/s,500/m,10000/d")
	want := []Rule{{N: 10, Window: time.Second}, {N: 500, Window: time.Minute}, {N: 10000, Window: 24 * time.Hour}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParseRules = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rule %d = %v, want %v", i, got[i], want[i])
		}
	}
	if s := FormatRules(got); s != "10/s,500/m,10000/d" {
		t.Errorf("FormatRules = %q", s)
	}
	if r, err := ParseRules(""); err != nil || r != nil {
		t.Errorf(`ParseRules("") = %v, %v; want nil, nil`, r, err)
	}
	// An empty element is named as such, with the whole list.
	_, err = ParseRules("10/s,,5/m")
	var re *RuleError
	if !errors.As(err, &re) || re.Spec != "10/s,,5/m" || re.Want != "a rule between every two commas, such as 10/s,500/min" {
		t.Errorf("ParseRules(%q) = %v; want a RuleError for the whole list that names the empty rule", "10/s,,5/m", err)
	}
}

func TestRuleString(t *testing.T) {
	tests := []struct {
		r    Rule
		want string
	}{
		{Rule{N: 10, Window: time.Second}, "10/s"},
		{Rule{N: 5, Window: 500 * time.Millisecond}, "5/500ms"},
		{Rule{N: 100, Window: 90 * time.Second}, "100/1m30s"},
		{Rule{N: 1, Window: 36 * time.Hour}, "1/1d12h"},
		{Rule{N: 3, Window: 1500 * time.Microsecond}, "3/1ms500us"},
		{Rule{N: 1, Window: time.Millisecond}, "1/ms"},
		{Rule{N: 100, Window: time.Second, Cost: true}, "cost:100/s"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"cost:100/s", "10/s", "500/min", "12/3s", "100/1m30s", "10000/day", "5/500ms", "0/s", "abc", "1/1d2h3m4s5ms6us7ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			if re := (*RuleError)(nil); !errors.As(err, &re) {
				t.Fatalf("ParseRule(%q) error %v is not a *RuleError", s, err)
			}
			return
		}
		if !r.Valid() {
			t.Fatalf("ParseRule(%q) = %v, which is not Valid", s, r)
		}
		back, err := ParseRule(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRule(%q) = %v, but ParseRule(%q) = %v, %v", s, r, r.String(), back, err)
		}
	})
}

// FuzzParseRules: a list of rules reads back as it is written, and every
// error is a *RuleError.
func FuzzParseRules(f *testing.F) {
	for _, s := range []string{"10/s,500/min", "5/s,5/s", "5/s,cost:5/s,5/s", "5/s,,", ",5/s", "1/d,1/24h", "12/3s, 12/3s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rules, err := ParseRules(s)
		if err != nil {
			if re := (*RuleError)(nil); !errors.As(err, &re) {
				t.Fatalf("ParseRules(%q) error %v is not a *RuleError", s, err)
			}
			return
		}
		if back, err := ParseRules(FormatRules(rules)); err != nil || !slices.Equal(back, rules) {
			t.Fatalf("ParseRules(%q) = %v, but ParseRules(%q) = %v, %v", s, rules, FormatRules(rules), back, err)
		}
	})
}
