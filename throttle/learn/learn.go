// Package learn keeps, in front of a throttle.Backend, the rules a server
// shows it keeps: inferred from its refusals (HTTP 429 and 503) and, if
// asked, adopted from the rules it publishes (RateLimit-Policy).
//
// When a caller's rules are looser than the server's, every call past the
// server's limit is refused; pausing for each refusal is not enough, as the
// next window is refused again. So after a refusal the learner infers a
// rule of its own, N per W, from what the server accepted: the calls
// admitted in the window W before the refused one. A refusal while the
// inferred rule holds lowers it by a quarter (multiplicative decrease);
// every quiet stretch of ten windows raises it by one call (additive
// recovery) until it is no tighter than the caller's rules, when it is
// dropped. A raise is a probe the server may refuse, and a refusal costs
// a pause as long as its Retry-After: each refused probe doubles the
// quiet stretch before the next (up to 64 times), and a caller that says
// how many calls are left (Options.Remaining) is not probed for when they
// are too few to repay a refused probe.
//
// A Backend is used like any other throttle.Backend; after each call the
// caller tells it what the server answered with Observe. Package pacehttp
// does that for HTTP clients.
package learn

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/fifo"
	"github.com/pace-cli/pace/throttle/internal/link"
)

// Windows are the windows an inferred rule may have besides the caller's:
// a second, a minute and an hour, as servers publish them.
var windows = []time.Duration{time.Second, time.Minute, time.Hour}

// recoverWindows is how many quiet windows raise an inferred rule by one.
const recoverWindows = 10

// maxProbeBackoff bounds how many times longer than recoverWindows the
// quiet stretch before a probe grows after probes the server refused.
const maxProbeBackoff = 64

// maxRecent bounds the admissions a learner remembers. Past it the oldest
// are forgotten, which can only make an inferred rule tighter.
const maxRecent = 1 << 16

// recentCap is the most admissions the history holds at once: the
// oldest are dropped once they are a quarter of it (insertLocked).
const recentCap = maxRecent + maxRecent/3 + 1

// MaxPolicyWindow is the longest window of a published rule the learner
// adopts: a longer one is a garbled or hostile header, and is ignored.
const MaxPolicyWindow = 31 * 24 * time.Hour

// MaxPolicySlowdown is how many times slower than the caller's rules a
// published rule may be and still be adopted: a policy that would slow a
// run more than that is ignored, so that a lying header cannot stall a
// run for days.
const MaxPolicySlowdown = 10_000

// Outcome is what the server answered to one call.
type Outcome struct {
	// Status is the HTTP status; 0 when no response came.
	Status int
	// RetryAfter is the wait the server asked for, 0 if none.
	RetryAfter time.Duration
	// Policy holds the rules the server published with the response, and
	// PolicyHeader the header they came from, for messages. A rule that
	// is not Valid, or not plausible (a window longer than
	// MaxPolicyWindow, a rate more than MaxPolicySlowdown times slower
	// than the caller's), is not adopted; Options.Hint is told why.
	Policy       []throttle.Rule
	PolicyHeader string
}

// Options configure a Backend.
type Options struct {
	// Adopt keeps the rules the server publishes as well as the caller's.
	Adopt bool
	// Hint, if set, is told things worth saying once, such as a policy
	// the server publishes that Adopt would keep.
	Hint func(string)
	// Remaining, if set, returns how many calls are still to be admitted,
	// or -1 if that is not known (input still being read, a proxy). The
	// learner then raises an inferred rule N per W only when the calls
	// left could repay a refused raise: R calls go about R·W/(N(N+1))
	// sooner at N+1 per W, and a refusal pauses for its Retry-After (at
	// least W), so it raises only when R·W ≥ N(N+1)·max(W, Retry-After).
	// It is called with the learner locked: it must not call the learner.
	Remaining func() int64
	// MaxWait, if positive, bounds how long a call may wait on the rules
	// the server published (Adopt): a call those rules would hold longer
	// is not admitted, and Admit returns a *PolicyWaitTooLong, as a
	// refusal asking for a longer pause is not waited out. Without it a
	// published rule of one call a month stalls a run for a month. The
	// rule inferred from refusals is not bounded: its window comes from
	// the pauses the server asked for, each within the caller's bound.
	MaxWait time.Duration
}

// PolicyWaitTooLong is Admit's error when a rule the server published
// would hold the call longer than Options.MaxWait.
type PolicyWaitTooLong struct {
	Rule   throttle.Rule // the published rule
	Header string        // the header it came from (Outcome.PolicyHeader), such as "RateLimit-Policy"
	Wait   time.Duration // how long the call would wait
	Max    time.Duration // Options.MaxWait
}

func (e *PolicyWaitTooLong) Error() string {
	return fmt.Sprintf("learn: under the rule the server publishes, %s (%s), the next call would wait %s, longer than the longest allowed, %s",
		e.Rule, e.Header, e.Wait.Round(time.Second), e.Max)
}

// Backend is a throttle.Backend that keeps, in front of another, the
// rules learned from the server. It is safe for concurrent use: callers
// may admit concurrently (as with a backend that lets calls overtake);
// those that wait on the learned rules are let through in the order they
// came. The zero value is not usable: make one with New.
type Backend struct {
	throttle.Backend
	user    []throttle.Rule // the caller's count rules
	maxCost int             // the largest cost the caller's rules admit; 0 for any (throttle.MaxCost)
	opts    Options

	turn         fifo.Lock // held by the one caller that waits on the learned rules
	mu           sync.Mutex
	changed      chan struct{} // closed and replaced when a reservation ends
	rules        []throttle.Rule
	margin       time.Duration
	inferred     *throttle.Rule  // the rule inferred from refusals
	adopted      []throttle.Rule // the rules the server published, adopted
	policyHeader string          // the header adopted came from
	published    []throttle.Rule // the latest rules the server published
	recent       []call          // admissions, by instant, within the longest window (history.go)
	kinds        []kind          // the kinds of admissions in recent, each once
	kindIndex    map[kind]uint32 // kinds by value: their index in kinds
	lastKind     uint32          // the index of the kind last met
	reserved     int             // admissions checked against the rules, not yet recorded
	refusals     int
	firstRule    throttle.Rule // the first rule inferred, for the report
	quietFrom    time.Time     // since when no refusal came
	lastRefusal  time.Time     // when the latest refusal came
	retryAfter   time.Duration // the latest refusal's Retry-After
	raised       bool          // the inferred rule was raised, and no refusal came since
	backoff      int           // the quiet stretch before a raise, in recoverWindows windows
	hinted       map[string]bool
	ruleSince    int64         // when the learned rules last changed (instant)
	waits        int64         // admissions that waited on the learned rules
	waitTime     time.Duration // how long, in all
	closed       chan struct{} // closed by Close: wakes admissions waiting on the learned rules
	closeOnce    sync.Once
}

// New returns a learner in front of b, for the caller's rules (of which it
// keeps the count rules). The learned rules' windows are widened by the
// margin b reports (Stats().Margin) until SetMargin says otherwise.
func New(b throttle.Backend, user []throttle.Rule, opts Options) *Backend {
	var count []throttle.Rule
	for _, r := range user {
		if !r.Cost {
			count = append(count, r)
		}
	}
	return &Backend{Backend: b, user: count, maxCost: throttle.MaxCost(user), opts: opts, changed: make(chan struct{}), hinted: map[string]bool{}, backoff: 1,
		closed: make(chan struct{}), margin: link.ClampMargin(b.Stats().Margin)}
}

// Close makes admissions waiting on the learned rules, and later ones,
// fail with throttle.ErrClosed, and closes the backend behind it.
func (l *Backend) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Backend.Close()
}

// Admit waits until the learned rules allow one more call, then admits it
// through the backend, then records it in the learned rules at that later
// instant. Recording late is the safe side; a reservation taken at the
// check keeps concurrent admissions from passing the same check. A cost
// below 1, or above the N of a cost rule of the caller's (New's user),
// fails at once with an error wrapping throttle.ErrBadCost.
func (l *Backend) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	// A cost that can never fit fails at once, as the backend fails it:
	// not after a wait on the learned rules that holds every caller
	// behind.
	switch {
	case cost < 1:
		return throttle.Admission{}, fmt.Errorf("learn: cost %d: %w", cost, throttle.ErrBadCost)
	case l.maxCost > 0 && cost > l.maxCost:
		return throttle.Admission{}, fmt.Errorf("learn: cost %d exceeds the smallest cost rule (%d): %w", cost, l.maxCost, throttle.ErrBadCost)
	}
	start := time.Now()
	reserved := false
	// One call at a time waits on the learned rules, in the order they
	// came (the backend behind admits first come, first served too):
	// callers that all woke when the rules had room raced for it, and
	// one could lose again and again while later ones went.
	if err := l.turn.Lock(ctx, l.closed); err != nil {
		return throttle.Admission{}, err
	}
	for {
		select {
		case <-l.closed:
			l.turn.Unlock()
			return throttle.Admission{}, throttle.ErrClosed
		default:
		}
		l.mu.Lock()
		now := instant(time.Now())
		d, wake := l.delayLocked(now)
		if d > l.opts.MaxWait && l.opts.MaxWait > 0 && wake == nil {
			if r, w := delayUnder(l.adopted, l.recent, l.reserved, l.margin, now); w > l.opts.MaxWait {
				err := &PolicyWaitTooLong{Rule: r, Header: l.policyHeader, Wait: w, Max: l.opts.MaxWait}
				l.mu.Unlock()
				l.turn.Unlock()
				return throttle.Admission{}, err
			}
		}
		if d == 0 {
			if len(l.rules) > 0 {
				l.reserved++
				reserved = true
			}
			l.mu.Unlock()
			break
		}
		l.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
		case <-l.closed:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			l.turn.Unlock()
			return throttle.Admission{}, ctx.Err()
		}
	}
	l.turn.Unlock() // the reservation keeps the next caller from the same room
	waited := time.Since(start)
	a, err := l.Backend.Admit(ctx, cost)
	now := time.Now()
	l.mu.Lock()
	if reserved {
		l.reserved--
		close(l.changed)
		l.changed = make(chan struct{})
	}
	if err != nil {
		l.mu.Unlock()
		return throttle.Admission{}, err
	}
	if waited >= time.Millisecond {
		l.waits++
		l.waitTime += waited
		a.Waited += waited
	}
	l.insertLocked(call{at: instant(now), adm: l.keyLocked(a, true)})
	l.mu.Unlock()
	// The backend recorded the call before it returned: the time since,
	// spent here (waiting for the lock, above all, which a busy machine
	// can hold up for milliseconds), is the admission's latency too.
	a.Latency += time.Since(now)
	return a, nil
}

// delayLocked returns how long a call at now must wait for the learned
// rules, counting the reservations as calls made now; 0 if it may go. When
// the reservations alone fill a rule, it returns a channel closed when one
// ends. Requires l.mu held.
func (l *Backend) delayLocked(now int64) (time.Duration, <-chan struct{}) {
	for _, r := range l.rules {
		if r.N-l.reserved-1 < 0 {
			return time.Hour, l.changed
		}
	}
	_, most := delayUnder(l.rules, l.recent, l.reserved, l.margin, now)
	return most, nil
}

// delayUnder returns how long a call at now (an instant) must wait for rules, given
// the calls recorded (recent, in order), the reservations counted as
// calls made now and the margin, and the rule that holds it longest. A
// rule the reservations alone fill counts for nothing here.
func delayUnder(rules []throttle.Rule, recent []call, reserved int, margin time.Duration, now int64) (throttle.Rule, time.Duration) {
	var most time.Duration
	var which throttle.Rule
	for _, r := range rules {
		room := r.N - reserved - 1 // recorded calls the window may hold
		if room < 0 {
			continue
		}
		// The (room+1)th latest accepted call must have left the window.
		k := 0
		for i := len(recent) - 1; i >= 0; i-- {
			c := recent[i]
			if c.refused {
				continue
			}
			if k == room {
				if d := time.Duration(c.at-now) + r.Window + margin; d > most {
					most, which = d, r
				}
				break
			}
			k++
		}
	}
	return which, most
}

// insertLocked records c in order and forgets what no rule can count any
// more. Requires l.mu held.
func (l *Backend) insertLocked(c call) {
	i := len(l.recent)
	for i > 0 && l.recent[i-1].at > c.at {
		i--
	}
	if n := len(l.recent); n == cap(l.recent) && n < recentCap {
		// Doubled, up to the most it ever holds: append's own growth
		// (a quarter at a time past a few hundred calls) copied the
		// whole history some twenty times on the way to maxRecent,
		// each time into fresh memory, a proxy's busiest work after
		// the network in its first hundred thousand requests.
		grown := make([]call, n, min(max(2*n, 256), recentCap))
		copy(grown, l.recent)
		l.recent = grown
	}
	l.recent = slices.Insert(l.recent, i, c)
	keep := time.Hour
	for _, r := range l.rules {
		keep = max(keep, r.Window+l.margin)
	}
	// What to forget is a prefix: the calls past the latest maxRecent,
	// and those more than keep before the latest (recent is in order).
	// Found by bisection: a scan of the prefix at every call cost a
	// proxy serving thousands of calls a second a third of its CPU.
	n := len(l.recent)
	last := l.recent[n-1].at
	cut := max(n-maxRecent, 0)
	cut += sort.Search(n-cut, func(j int) bool { return time.Duration(last-l.recent[cut+j].at) <= keep })
	// Dropped a quarter at a time, so that the slice is not shifted at
	// every call; the few old calls left count for nothing.
	if cut > 0 && cut >= len(l.recent)/4 {
		l.recent = slices.Delete(l.recent, 0, cut)
		l.forgetKindsLocked()
	}
}

// SetMargin widens the learned rules' windows by d, as the backend's: a
// negative d counts as 0, one wider than a century (the longest window a
// rule may have) as that.
func (l *Backend) SetMargin(d time.Duration) {
	l.mu.Lock()
	l.margin = link.ClampMargin(d)
	l.mu.Unlock()
	l.Backend.SetMargin(d)
}

// Observe learns from the server's answer to the call admitted as a: a
// refusal tightens the learned rule, a success may loosen it, a published
// policy may be adopted. a must come from this learner's Admit (a copy
// will do, its cost corrected or not); an admission it no longer
// remembers only counts for the policy.
func (l *Backend) Observe(a throttle.Admission, o Outcome) {
	if o.Status == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if len(o.Policy) > 0 && !slices.Equal(o.Policy, l.published) {
		l.published = slices.Clone(o.Policy)
		l.publishedLocked(now, o)
	}
	switch {
	case o.Status == 429 || o.Status == 503:
		l.refusedLocked(now, a, o.RetryAfter)
	case o.Status >= 200 && o.Status <= 299:
		l.quietLocked(now)
	}
}

// publishedLocked adopts, or hints at, the rules the server published.
// Requires l.mu held.
func (l *Backend) publishedLocked(now time.Time, o Outcome) {
	var ok []throttle.Rule
	for _, r := range o.Policy {
		if why := l.implausible(r); why != "" {
			// Said once for each reason, not each rule: a server that
			// publishes another absurd rule with every answer must not
			// fill the caller's stderr, nor memory, with one line each.
			l.hintLocked("implausible:"+why, fmt.Sprintf("the server publishes %s (%s), which pace ignores: %s",
				r, o.PolicyHeader, why))
			continue
		}
		ok = append(ok, r)
	}
	if !l.opts.Adopt {
		if len(ok) > 0 {
			l.hintLocked("adopt", fmt.Sprintf("the server publishes %s (%s); --rules-from-server would keep it",
				throttle.FormatRules(ok), o.PolicyHeader))
		}
		return
	}
	l.adopted, l.policyHeader = ok, o.PolicyHeader
	l.rebuildLocked(now)
}

// implausible says why a published rule is not to be believed, or "".
func (l *Backend) implausible(r throttle.Rule) string {
	if !r.Valid() {
		// Not a rule at all: N 0 (or less) would hold every admission
		// for good, a window of 0 (or less) divides by zero below.
		return fmt.Sprintf("it is not a rule (want 1 <= N <= %d and a positive window)", throttle.MaxLimit)
	}
	if r.Window > MaxPolicyWindow {
		return fmt.Sprintf("its window is longer than %s", formatDays(MaxPolicyWindow))
	}
	for _, u := range l.user {
		// Over the longer window, how many calls each allows.
		w := max(r.Window, u.Window)
		theirs := float64(r.N) * float64(w) / float64(r.Window)
		ours := float64(u.N) * float64(w) / float64(u.Window)
		if theirs*MaxPolicySlowdown < ours {
			return fmt.Sprintf("it is more than %d times slower than %s", MaxPolicySlowdown, u)
		}
	}
	return ""
}

// formatDays writes d in days.
func formatDays(d time.Duration) string {
	return fmt.Sprintf("%d days", d/(24*time.Hour))
}

// hintLocked says msg once for key. Requires l.mu held.
func (l *Backend) hintLocked(key, msg string) {
	if l.hinted[key] || l.opts.Hint == nil {
		return
	}
	l.hinted[key] = true
	l.opts.Hint(msg)
}

// refusedLocked lowers the learned rule after the server refused the call
// admitted as a. Requires l.mu held.
func (l *Backend) refusedLocked(now time.Time, a throttle.Admission, retryAfter time.Duration) {
	l.refusals++
	l.quietFrom = now
	prev := l.lastRefusal
	l.lastRefusal = now
	l.retryAfter = retryAfter
	i := l.indexLocked(a)
	if i < 0 || a.At.IsZero() {
		return // admitted too long ago to say anything
	}
	l.recent[i].refused = true
	if l.inferred != nil && l.recent[i].at > l.ruleSince {
		l.probeRefusedLocked()
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
		candidates := slices.Clone(windows)
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
	var accepted []int64
	for _, c := range l.recent {
		if !c.refused {
			accepted = append(accepted, c.at)
		}
	}
	for hi, t := range accepted {
		for accepted[lo] <= t-int64(w) {
			lo++
		}
		n = max(n, hi-lo+1)
	}
	if n == 0 {
		return // nothing accepted yet: no count to learn from
	}
	if est := l.fleetCountLocked(n, w); est > n && !l.tighter(throttle.Rule{N: est + est/3, Window: w}) &&
		(prev.IsZero() || now.Sub(prev) > recoverWindows*w) {
		// The fleet had about as many calls accepted as the caller's rules
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
	} else {
		l.probeRefusedLocked()
		if l.firstRule.Window == rule.Window {
			l.firstRule = rule // the same burst, counted better
		}
	}
	l.inferred = &rule
	l.rebuildLocked(now)
}

// probeRefusedLocked notes that the server refused a call under the
// inferred rule: if it had been raised since the last refusal, the raise
// was refused, and the next waits twice as long. Requires l.mu held.
func (l *Backend) probeRefusedLocked() {
	if l.raised {
		l.backoff = min(2*l.backoff, maxProbeBackoff)
		l.raised = false
	}
}

// fleetCountLocked estimates how many calls the server accepted in a
// window w across the fleet, when the backend is shared with other
// processes, from n, this process's own: the backend reports how many
// calls the fleet had in a caller's rule of that window at this process's
// last admission, of which this process admitted those in l.recent within
// w of it. Without such a rule, or alone, it returns n. The inferred rule
// itself stays this process's share: each process keeps it for itself.
// Requires l.mu held.
func (l *Backend) fleetCountLocked(n int, w time.Duration) int {
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
		if c.at > last-int64(w) {
			own++
		}
	}
	if fleet <= own || own == 0 {
		return n
	}
	return max(n, n*fleet/own)
}

// quietLocked raises the learned rule by one call after ten quiet windows,
// and drops it once it is no tighter than the caller's rules. Requires
// l.mu held.
func (l *Backend) quietLocked(now time.Time) {
	if l.inferred == nil {
		return
	}
	if l.quietFrom.IsZero() {
		l.quietFrom = now
	}
	if now.Sub(l.quietFrom) < time.Duration(l.backoff)*recoverWindows*l.inferred.Window || !l.repaysLocked() {
		return
	}
	l.quietFrom = now
	next := throttle.Rule{N: l.inferred.N + 1, Window: l.inferred.Window}
	if l.tighter(next) {
		l.inferred = &next
		l.raised = true
	} else {
		l.inferred = nil
	}
	l.rebuildLocked(now)
}

// repaysLocked reports whether the calls left could repay raising the
// inferred rule by one, should the server refuse it (Options.Remaining);
// true when the caller does not say. Requires l.mu held.
func (l *Backend) repaysLocked() bool {
	if l.opts.Remaining == nil {
		return true
	}
	r := l.opts.Remaining()
	if r < 0 {
		return true
	}
	n, w := float64(l.inferred.N), l.inferred.Window
	return float64(r)*w.Seconds() >= n*(n+1)*max(w, l.retryAfter).Seconds()
}

// tighter reports whether rule allows less than the caller's rules do
// over its window.
func (l *Backend) tighter(rule throttle.Rule) bool {
	for _, u := range l.user {
		// The caller's rule allows at most u.N per u.Window: over rule's
		// window, about u.N * ceil(rule.Window/u.Window).
		windows := int((rule.Window + u.Window - 1) / u.Window)
		if rule.N >= u.N*windows {
			return false
		}
	}
	return true
}

// rebuildLocked makes the learned rules those adopted and inferred now.
// Requires l.mu held.
func (l *Backend) rebuildLocked(now time.Time) {
	l.rules = l.rulesLocked()
	l.ruleSince = instant(now)
}

// Rules returns the rules learned from the server now: adopted and
// inferred.
func (l *Backend) Rules() []throttle.Rule {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rulesLocked()
}

// rulesLocked is Rules with l.mu held.
func (l *Backend) rulesLocked() []throttle.Rule {
	rules := slices.Clone(l.adopted)
	if l.inferred != nil {
		rules = append(rules, *l.inferred)
	}
	return rules
}

// Report says what a learner did.
type Report struct {
	Refusals int             // refusals observed
	Waits    int64           // admissions that waited on learned rules
	WaitTime time.Duration   // how long, in all
	First    *throttle.Rule  // the first rule inferred; nil for none
	Now      *throttle.Rule  // the rule inferred in force now; nil for none
	Adopted  []throttle.Rule // the server's published rules kept
}

// Report returns what the learner did so far.
func (l *Backend) Report() Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := Report{Refusals: l.refusals, Waits: l.waits, WaitTime: l.waitTime, Adopted: slices.Clone(l.adopted)}
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
