package strictserver

import (
	"fmt"
	"slices"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Sent is one request as both ends saw it, for Judge: when the client's
// limiter recorded it and when the server took it, on one clock.
type Sent struct {
	Name     string    // how messages name it: its path, its job
	Admitted time.Time // the instant the client's limiter recorded it
	Arrived  time.Time // its arrival at the server (Request.At)
	Cost     int       // what cost rules count; below 1 counts as 1
	Refused  bool      // the server refused it by its rules
}

// lag returns how long after its admission s reached the server.
func (s Sent) lag() time.Duration { return s.Arrived.Sub(s.Admitted) }

// Verdict is what Judge made of a run. Faults are the client's: each
// fails a test. Excused are refusals the machine's load explains, each
// with its numbers, for a test to log.
type Verdict struct {
	Faults  []string
	Excused []string
}

// Judge tells the refusals a client's limiter explains from those its
// load explains. A limiter that keeps rules with every window widened by
// margin records no N+1 calls (or cost past N) within Window+margin, so
// a server counting on arrival sees them within Window only if their lags
// (Arrived - Admitted) differ by more than margin: the machine held one
// call back more than another, beyond what the margin covers.
//
// So a fault is either admissions that break a rule widened by margin
// (throttle.Check over every Sent's admission, refused or not), or a
// refusal that the calls the server counted against it do not excuse:
// those calls and the refused one admitted within Window+margin of each
// other (then their lags need not differ by more than margin), or
// accepted calls that keep every rule (the record misses some). Every
// other refusal is excused: its calls were admitted far enough apart
// and arrived too close together, and the message gives how far apart
// both were and which lags differed by how much.
//
// The calls the server counted against a refusal are, for each rule it
// breaks, the accepted arrivals latest before it that make it one too
// many. Admitted and Arrived must be on one clock; a client that keeps
// admissions to a coarser precision passes a margin less that precision.
func Judge(rules []throttle.Rule, margin time.Duration, sent []Sent) Verdict {
	var v Verdict
	wide := make([]throttle.Rule, len(rules))
	admissions := make([]throttle.Call, len(sent))
	for i, r := range rules {
		r.Window += margin
		wide[i] = r
	}
	for i, s := range sent {
		admissions[i] = throttle.Call{At: s.Admitted, Cost: s.Cost}
	}
	for _, c := range throttle.Check(wide, admissions) {
		if c.Violations > 0 {
			v.Faults = append(v.Faults, fmt.Sprintf("admissions break %v widened by the margin %v: %d calls too many, the first %s (peak %d in a window)",
				unwiden(c.Rule, margin), margin, c.Violations, sent[c.First].Name, c.Peak))
		}
	}

	accepted := make([]Sent, 0, len(sent))
	for _, s := range sent {
		if !s.Refused {
			accepted = append(accepted, s)
		}
	}
	slices.SortStableFunc(accepted, func(a, b Sent) int { return a.Arrived.Compare(b.Arrived) })
	for _, b := range sent {
		if !b.Refused {
			continue
		}
		fault, excuses := judgeRefusal(rules, margin, accepted, b)
		switch {
		case fault != "":
			v.Faults = append(v.Faults, fault)
		case len(excuses) == 0:
			v.Faults = append(v.Faults, fmt.Sprintf("%s refused, but the calls the server accepted before it keep every rule: the record misses some", b.Name))
		default:
			v.Excused = append(v.Excused, excuses...)
		}
	}
	return v
}

// judgeRefusal returns, for refused call b, a fault if some rule it broke
// at the server was broken by the admissions of the calls counted against
// it, else one excuse per rule it broke. accepted is sorted by arrival.
func judgeRefusal(rules []throttle.Rule, margin time.Duration, accepted []Sent, b Sent) (fault string, excuses []string) {
	// Accepted arrivals up to b's, latest first.
	end, _ := slices.BinarySearchFunc(accepted, b.Arrived, func(s Sent, t time.Time) int {
		if s.Arrived.After(t) {
			return 1
		}
		return -1
	})
	for _, r := range rules {
		weight := func(s Sent) int {
			if r.Cost {
				return max(s.Cost, 1)
			}
			return 1
		}
		held, group := weight(b), []Sent{b}
		for i := end - 1; i >= 0 && held <= r.N && accepted[i].Arrived.After(b.Arrived.Add(-r.Window)); i-- {
			held += weight(accepted[i])
			group = append(group, accepted[i])
		}
		if held <= r.N {
			continue // not this rule
		}
		first, last, early, late := group[0], group[0], group[0], group[0]
		for _, s := range group {
			first = pick(first, s, func(a, b Sent) bool { return a.Admitted.Before(b.Admitted) })
			last = pick(last, s, func(a, b Sent) bool { return a.Admitted.After(b.Admitted) })
			early = pick(early, s, func(a, b Sent) bool { return a.lag() < b.lag() })
			late = pick(late, s, func(a, b Sent) bool { return a.lag() > b.lag() })
		}
		admitted, arrived := last.Admitted.Sub(first.Admitted), b.Arrived.Sub(group[len(group)-1].Arrived)
		us := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
		if admitted < r.Window+margin {
			return fmt.Sprintf("%s refused by %v: it and the %d calls the server counted before it were admitted within %v, less than the window plus the margin %v",
				b.Name, r, len(group)-1, us(admitted), r.Window+margin), nil
		}
		excuses = append(excuses, fmt.Sprintf("%s refused by %v: it and the %d calls the server counted before it were admitted over %v (the window plus %v, the margin %v) but arrived within %v; "+
			"their lags ran from %v (%s) to %v (%s), %v apart, more than the margin",
			b.Name, r, len(group)-1, us(admitted), us(admitted-r.Window), margin, us(arrived),
			us(early.lag()), early.Name, us(late.lag()), late.Name, us(late.lag()-early.lag())))
	}
	return "", excuses
}

// pick returns the lesser of a and b by less, a on ties.
func pick(a, b Sent, less func(a, b Sent) bool) Sent {
	if less(b, a) {
		return b
	}
	return a
}

// unwiden returns r as it was before Judge widened its window by margin.
func unwiden(r throttle.Rule, margin time.Duration) throttle.Rule {
	r.Window -= margin
	return r
}
