package cmd

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// noInternals fails t when msg shows Go's or pace's internals instead of
// a message for users.
func noInternals(t *testing.T, what, msg string) {
	t.Helper()
	for _, bad := range []string{"strconv", "ParseInt", "Atoi", "time: ", "missing unit", "throttle:", "invalid syntax"} {
		if strings.Contains(msg, bad) {
			t.Errorf("%s: message %q shows %q", what, msg, bad)
		}
	}
}

func TestRulesValue(t *testing.T) {
	var rules []throttle.Rule
	v := rulesValue{rules: &rules}
	for _, s := range []string{"10/s", "500/min,12/3s"} {
		if err := v.Set(s); err != nil {
			t.Fatalf("Set(%q) = %v", s, err)
		}
	}
	want := []throttle.Rule{{N: 10, Window: time.Second}, {N: 500, Window: time.Minute}, {N: 12, Window: 3 * time.Second}}
	if !slices.Equal(rules, want) || v.String() != "10/s,500/m,12/3s" || v.Type() != "N/PERIOD" {
		t.Errorf("rules = %v (%q), want %v", rules, v.String(), want)
	}
	// A rule given again, in a list or by a repeated flag, is kept once.
	for _, s := range []string{"10/s,10/s", "12/3s"} {
		if err := v.Set(s); err != nil {
			t.Fatalf("Set(%q) = %v", s, err)
		}
	}
	if !slices.Equal(rules, want) || v.String() != "10/s,500/m,12/3s" {
		t.Errorf("after Set(10/s,10/s) and Set(12/3s): rules = %v (%q), want %v", rules, v.String(), want)
	}
	if got := (rulesValue{}).String(); got != "" {
		t.Errorf("zero rulesValue.String() = %q, want empty", got)
	}
	// --cost-rate: the same rules, counting costs.
	var cost []throttle.Rule
	if err := (rulesValue{rules: &cost, cost: true}).Set("90000/min"); err != nil || len(cost) != 1 || !cost[0].Cost {
		t.Errorf("cost Set(90000/min) = %v, rules %v; want one cost rule", err, cost)
	}
	err := (rulesValue{rules: &cost, cost: true}).Set("cost:5/s")
	if err == nil || err.Error() != `rule "cost:5/s": --cost-rate takes N/PERIOD without the cost: prefix` {
		t.Errorf("cost Set(cost:5/s) = %v, want a message about the prefix", err)
	}
}

func TestRulesValueErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "want rules such as 10/s or 10/s,500/min"},
		{"  ", "want rules such as 10/s or 10/s,500/min"},
		{"5/s,", "the rule list ends with a comma; give several rules without spaces, as in 5/s,500/min, or repeat the flag"},
		{"5s", `rule "5s": want a limit and a period separated by '/'; did you mean 5/s?`},
		{"10m", `rule "10m": want a limit and a period separated by '/'; did you mean 10/min?`},
		{"5 per second", `rule "5 per second": want a limit and a period separated by '/'; did you mean 5/s?`},
		{"100 a minute", `rule "100 a minute": want a limit and a period separated by '/'; did you mean 100/min?`},
		{"5 per 3s", `rule "5 per 3s": want a limit and a period separated by '/'; did you mean 5/3s?`},
		{"10/fortnight", `rule "10/fortnight": want a period such as s, min, h, day, 3s, 500ms or 1m30s`},
		{"0/s", `rule "0/s": want`},
		{"ten/s", `rule "ten/s": want`},
	} {
		var rules []throttle.Rule
		err := (rulesValue{rules: &rules}).Set(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Set(%q) = %v, want an error starting %q", tt.in, err, tt.want)
			continue
		}
		noInternals(t, "Set("+tt.in+")", err.Error())
		if len(rules) != 0 {
			t.Errorf("Set(%q) failed but added %v", tt.in, rules)
		}
	}
}

func TestIntValue(t *testing.T) {
	var n int
	v := intValue{&n}
	if err := v.Set(" 12 "); err != nil || n != 12 || v.String() != "12" {
		t.Errorf("Set(12) = %v, n = %d", err, n)
	}
	for _, tt := range []struct{ in, want string }{
		{"many", "want a whole number, such as 4"},
		{"1.5", "want a whole number, such as 4"},
		{"99999999999999999999", "want a smaller whole number"},
	} {
		err := v.Set(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Set(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	if n != 12 {
		t.Errorf("failed Sets changed the value to %d", n)
	}
	if (intValue{}).String() != "0" {
		t.Errorf("zero intValue.String() = %q", (intValue{}).String())
	}
}

func TestDurationValues(t *testing.T) {
	var d time.Duration
	set := false
	if err := (setDurationValue{&d, &set}).Set("0"); err != nil || d != 0 || !set {
		t.Errorf("setDurationValue.Set(0) = %v: %v, set %v; want 0 and set", err, d, set)
	}
	set = false
	if err := (setDurationValue{&d, &set}).Set("x"); err == nil || set {
		t.Errorf("setDurationValue.Set(x) = %v, set %v; want an error, not set", err, set)
	}
	if err := (durationValue{&d}).Set("2s"); err != nil || d != 2*time.Second || (durationValue{&d}).String() != "2s" {
		t.Errorf("durationValue.Set(2s) = %v, %v", err, d)
	}
}

func TestEnumValue(t *testing.T) {
	v := "auto"
	e := enumValue{&v, []string{"auto", "always", "never"}}
	if err := e.Set("never"); err != nil || v != "never" || e.String() != "never" {
		t.Errorf("Set(never) = %v, value %q", err, v)
	}
	if err := e.Set("sometimes"); err == nil || err.Error() != "want one of auto, always, never" || v != "never" {
		t.Errorf("Set(sometimes) = %v, value %q; want the choices, unchanged", err, v)
	}
	if e.Type() != "auto|always|never" || (enumValue{}).String() != "" {
		t.Errorf("Type() = %q", e.Type())
	}
}

func TestSetStringValue(t *testing.T) {
	var s string
	set := false
	if err := (setStringValue{&s, &set}).Set(""); err != nil || !set || s != "" {
		t.Errorf("Set(\"\") = %v: %q, set %v; want an empty value that was given", err, s, set)
	}
}

func TestFlagValuesAreTyped(t *testing.T) {

	var n int
	var d time.Duration
	var z int64
	for _, tt := range []struct{ got, want string }{
		{intValue{&n}.Type(), "int"}, {durationValue{&d}.Type(), "duration"}, {sizeValue{&z}.Type(), "size"},
		{setDurationValue{&d, new(bool)}.Type(), "duration"}, {setStringValue{new(string), new(bool)}.Type(), "string"},
	} {
		if tt.got != tt.want {
			t.Errorf("Type() = %q, want %q", tt.got, tt.want)
		}
	}
	z = 64 << 20
	if got := (sizeValue{&z}).String(); got != "64M" {
		t.Errorf("sizeValue.String() = %q, want 64M", got)
	}
}
