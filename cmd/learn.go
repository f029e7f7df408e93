package cmd

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// Learning from the server. When the user's rules are looser than the
// server's, every call past the server's limit is refused: pace pauses for
// each 429, but without learning it refuses again a window later. So after
// a refusal pace infers a rule of its own, N per W, from what the server
// accepted: the calls it admitted in the window W before the refused one.
// A refusal while the inferred rule holds lowers it by a quarter
// (multiplicative decrease); every quiet stretch of ten windows raises it
// by one call (additive recovery) until it is no tighter than the user's
// rules, when it is dropped. With --rules-from-server the rules a server
// publishes (RateLimit-Policy and the like) are kept as well, intersected
// with -r.
//
// These rules are kept by an in-memory limiter in front of the backend:
// it waits, without recording, until its rules allow a call, then the
// backend admits the call, then it records the call at that later instant.
// Recording late is the safe side of the stacking flaw (docs/design.md),
// and admission is sequential (the pool admits one call at a time), so
// nothing slips in between the check and the record.

// learnWindows are the windows an inferred rule may have besides the
// user's: a second, a minute and an hour, as servers publish them.
var learnWindows = []time.Duration{time.Second, time.Minute, time.Hour}

// recoverWindows is how many quiet windows raise an inferred rule by one.
const recoverWindows = 10

// learner is a throttle.Backend that adds, in front of another, the rules
// learned from the server. Admit must not be called concurrently (the
// pool admits one call at a time); observe and the rest may be.
type learner struct {
	throttle.Backend
	user  []throttle.Rule // the user's count rules
	adopt bool            // --rules-from-server
	hint  func(string)    // says a thing once, on stderr

	mu          sync.Mutex
	local       *throttle.Limiter // the learned rules; nil for none
	inferred    *throttle.Rule    // the rule inferred from refusals
	adopted     []throttle.Rule   // the rules the server published, adopted
	published   []throttle.Rule   // the latest rules the server published
	recent      []learnCall       // admissions, oldest first, within an hour
	refusals    int
	firstRule   throttle.Rule // the first rule inferred, for the summary
	quietFrom   time.Time     // since when no refusal came
	lastRefusal time.Time     // when the latest refusal came
	hinted      bool
	ruleSince   time.Time     // when the learned rules last changed
	waits       int64         // admissions that waited on the learned rules
	waitTime    time.Duration // how long, in all
}

// learnCall is one admission the learner saw, by this process's clock.
type learnCall struct {
	at      time.Time
	cost    int
	refused bool
	seq     int64
	attempt int
}

// newLearner returns the learner in front of b, for the user's rules.
func newLearner(b throttle.Backend, user []throttle.Rule, adopt bool, hint func(string)) *learner {
	var count []throttle.Rule
	for _, r := range user {
		if !r.Cost {
			count = append(count, r)
		}
	}
	return &learner{Backend: b, user: count, adopt: adopt, hint: hint}
}

// Admit waits for the learned rules, then admits through the backend, then
// records the call in the learned rules.
func (l *learner) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	start := time.Now()
	for {
		l.mu.Lock()
		local := l.local
		l.mu.Unlock()
		if local == nil {
			break
		}
		d := local.DelayN(time.Now(), 1)
		if d <= 0 {
			break
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return throttle.Admission{}, ctx.Err()
		}
	}
	waited := time.Since(start)
	a, err := l.Backend.Admit(ctx, cost)
	if err != nil {
		return throttle.Admission{}, err
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if waited >= time.Millisecond {
		l.waits++
		l.waitTime += waited
		a.Waited += waited
	}
	if l.local != nil {
		if la, ok := l.local.AllowN(now, 1); ok {
			la.Release()
		}
	}
	l.recent = append(l.recent, learnCall{at: now, cost: cost})
	cut := 0
	for cut < len(l.recent) && now.Sub(l.recent[cut].at) > time.Hour {
		cut++
	}
	l.recent = slices.Delete(l.recent, 0, cut)
	return a, nil
}

// started ties the latest admission to its job, so that a refusal can be
// placed among the admissions.
func (l *learner) started(job runner.Job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.recent); n > 0 && l.recent[n-1].seq == 0 {
		l.recent[n-1].seq, l.recent[n-1].attempt = job.Seq, job.Attempt
	}
}

// observe learns from a fetch attempt's response: a refusal tightens the
// learned rule, a success may loosen it, a published policy may be
// adopted.
func (l *learner) observe(r *runner.Result) {
	h := r.HTTP
	if h == nil || h.StatusCode == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if len(h.Policy) > 0 && !slices.Equal(h.Policy, l.published) {
		l.published = h.Policy
		if l.adopt {
			l.adopted = h.Policy
			l.rebuildLocked(now)
		} else if !l.hinted && l.hint != nil {
			l.hinted = true
			l.hint(fmt.Sprintf("the server publishes %s (%s); --rules-from-server would keep it",
				throttle.FormatRules(h.Policy), h.PolicyHeader))
		}
	}
	switch {
	case h.StatusCode == 429 || h.StatusCode == 503:
		l.refusedLocked(now, r, h.RetryAfter)
	case h.StatusCode >= 200 && h.StatusCode <= 299:
		l.quietLocked(now)
	}
}

// refusedLocked lowers the learned rule after the server refused r.
// Requires l.mu held.
func (l *learner) refusedLocked(now time.Time, r *runner.Result, retryAfter time.Duration) {
	l.refusals++
	l.quietFrom = now
	prev := l.lastRefusal
	l.lastRefusal = now
	i := slices.IndexFunc(l.recent, func(c learnCall) bool { return c.seq == r.Job.Seq && c.attempt == r.Job.Attempt })
	if i < 0 {
		return // admitted too long ago to say anything
	}
	l.recent[i].refused = true
	if l.inferred != nil && l.recent[i].at.After(l.ruleSince) {
		// Refused under the learned rule: lower it by a quarter.
		n := max(1, l.inferred.N-max(1, l.inferred.N/4))
		l.inferred = &throttle.Rule{N: n, Window: l.inferred.Window}
		l.rebuildLocked(now)
		return
	}
	// The server accepted at most so many calls in a window, and no more.
	// Refusals of calls admitted before a rule was learned (the rest of
	// the burst that found the limit) only make that count more exact.
	// The window: the shortest candidate no shorter than the wait the
	// server asked for.
	w := time.Second
	if l.inferred != nil {
		w = l.inferred.Window
	} else {
		candidates := slices.Clone(learnWindows)
		for _, u := range l.user {
			candidates = append(candidates, u.Window)
		}
		slices.Sort(candidates)
		// Retry-After has whole seconds; an HTTP-date one, counted from
		// our clock, comes out a little over. Compare whole seconds.
		ra := retryAfter.Truncate(time.Second)
		for _, c := range candidates {
			if c >= ra {
				w = c
				break
			}
		}
	}
	// The most calls the server accepted in any window W: calls that
	// arrive in another order than they were admitted make the first
	// refusal a poor count.
	n, lo := 0, 0
	var accepted []time.Time
	for _, c := range l.recent {
		if !c.refused {
			accepted = append(accepted, c.at)
		}
	}
	for hi, t := range accepted {
		for !accepted[lo].After(t.Add(-w)) {
			lo++
		}
		n = max(n, hi-lo+1)
	}
	if n == 0 {
		return // nothing accepted yet: no count to learn from
	}
	if est := l.fleetCountLocked(n, w); est > n && !l.tighter(throttle.Rule{N: est + est/3, Window: w}) &&
		(prev.IsZero() || now.Sub(prev) > recoverWindows*w) {
		// The fleet had about as many calls accepted as the user's rules
		// allow, and this is the first refusal in a while: the rules are
		// likely right, and a call arrived early (a lag the margin did not
		// cover). A rule from this process's share would slow it for
		// nothing; refusals that go on are learned from.
		return
	}
	rule := throttle.Rule{N: n, Window: w}
	if l.inferred != nil && l.inferred.N <= rule.N || l.inferred == nil && !l.tighter(rule) {
		return
	}
	if l.inferred == nil {
		l.firstRule = rule
	} else if l.firstRule.Window == rule.Window {
		l.firstRule = rule // the same burst, counted better
	}
	l.inferred = &rule
	l.rebuildLocked(now)
}

// fleetCountLocked estimates how many calls the server accepted in a
// window w across the fleet, when the backend is shared with other
// processes, from n, this process's own: the backend reports how many
// calls the fleet had in a user's rule of that window at this process's
// last admission, of which this process admitted those in l.recent within
// w of it. Without such a rule, or alone, it returns n. The inferred rule
// itself stays this process's share: each process keeps it for itself.
// Requires l.mu held.
func (l *learner) fleetCountLocked(n int, w time.Duration) int {
	st := l.Backend.Stats()
	if st.Store.Name == "" || len(l.recent) == 0 {
		return n
	}
	fleet := 0
	for _, rs := range st.Rules {
		if !rs.Rule.Cost && rs.Rule.Window == w {
			fleet = max(fleet, rs.Used)
		}
	}
	last := l.recent[len(l.recent)-1].at
	own := 0
	for _, c := range l.recent {
		if c.at.After(last.Add(-w)) {
			own++
		}
	}
	if fleet <= own || own == 0 {
		return n
	}
	return max(n, n*fleet/own)
}

// quietLocked raises the learned rule by one call after ten quiet windows,
// and drops it once it is no tighter than the user's rules. Requires l.mu
// held.
func (l *learner) quietLocked(now time.Time) {
	if l.inferred == nil {
		return
	}
	if l.quietFrom.IsZero() {
		l.quietFrom = now
	}
	if now.Sub(l.quietFrom) < recoverWindows*l.inferred.Window {
		return
	}
	l.quietFrom = now
	next := throttle.Rule{N: l.inferred.N + 1, Window: l.inferred.Window}
	if l.tighter(next) {
		l.inferred = &next
	} else {
		l.inferred = nil
	}
	l.rebuildLocked(now)
}

// tighter reports whether rule allows less than the user's rules do over
// its window.
func (l *learner) tighter(rule throttle.Rule) bool {
	for _, u := range l.user {
		// The user's rule allows at most u.N per u.Window: over rule's
		// window, about u.N * ceil(rule.Window/u.Window).
		windows := int((rule.Window + u.Window - 1) / u.Window)
		if rule.N >= u.N*windows {
			return false
		}
	}
	return true
}

// rebuildLocked makes a new limiter for the learned rules, seeded with the
// recent admissions. Requires l.mu held.
func (l *learner) rebuildLocked(now time.Time) {
	rules := l.rulesLocked()
	if len(rules) == 0 {
		l.local = nil
		return
	}
	local, err := throttle.New(throttle.Options{Rules: rules, Margin: l.Stats().Margin})
	if err != nil {
		return // the rules came from headers and were checked: unreachable
	}
	calls := make([]throttle.Call, 0, len(l.recent))
	for _, c := range l.recent {
		if !c.refused {
			calls = append(calls, throttle.Call{At: c.at, Cost: 1})
		}
	}
	local.Seed(calls)
	l.local = local
	l.ruleSince = now
}

// rules returns the rules learned from the server now: adopted and
// inferred.
func (l *learner) rules() []throttle.Rule {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rulesLocked()
}

// rulesLocked is rules with l.mu held.
func (l *learner) rulesLocked() []throttle.Rule {
	rules := slices.Clone(l.adopted)
	if l.inferred != nil {
		rules = append(rules, *l.inferred)
	}
	return rules
}

// learned says what the learner did, for the summary.
type learned struct {
	Refusals int
	Waits    int64           // admissions that waited on learned rules
	WaitTime time.Duration   // how long, in all
	First    *throttle.Rule  // the first rule inferred
	Now      *throttle.Rule  // the rule in force at the end, nil if dropped
	Adopted  []throttle.Rule // the server's published rules kept
}

// report returns what the learner did.
func (l *learner) report() learned {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := learned{Refusals: l.refusals, Waits: l.waits, WaitTime: l.waitTime, Adopted: slices.Clone(l.adopted)}
	if l.firstRule.N > 0 {
		first := l.firstRule
		r.First = &first
	}
	if l.inferred != nil {
		now := *l.inferred
		r.Now = &now
	}
	return r
}
