package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/throttletest"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// wait bounds how long a test waits for the pool to do something that it
// must do; it only matters when the code under test is broken.
const wait = 10 * time.Second

// call is one Execute on a fakeExec, waiting for the test's verdict.
type call struct {
	job   Job
	ctx   context.Context
	reply chan int // exit code
}

// fakeExec hands every Execute to the test through calls.
type fakeExec struct {
	calls     chan call
	prepErr   func(*Job) error
	running   atomic.Int32
	peak      atomic.Int32
	mu        sync.Mutex
	prepared  []Job
	cancelled atomic.Int32
}

func newFakeExec() *fakeExec { return &fakeExec{calls: make(chan call)} }

func (f *fakeExec) Prepare(job *Job) error {
	f.mu.Lock()
	f.prepared = append(f.prepared, *job)
	f.mu.Unlock()
	if f.prepErr != nil {
		if err := f.prepErr(job); err != nil {
			return err
		}
	}
	job.Argv = []string{"fake", job.Item}
	return nil
}

func (f *fakeExec) Execute(ctx context.Context, job *Job) *Result {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	c := call{job: *job, ctx: ctx, reply: make(chan int, 1)}
	select {
	case f.calls <- c:
	case <-ctx.Done():
		f.cancelled.Add(1)
		return &Result{ExitCode: -1, Signal: 9}
	}
	select {
	case code := <-c.reply:
		return &Result{ExitCode: code}
	case <-ctx.Done():
		f.cancelled.Add(1)
		return &Result{ExitCode: -1, Signal: 9}
	}
}

// next returns the next call, failing the test if none comes.
func (f *fakeExec) next(t *testing.T) call {
	t.Helper()
	select {
	case c := <-f.calls:
		return c
	case <-time.After(wait):
		t.Fatal("no job started")
		return call{}
	}
}

// gateLimiter admits one caller per grant.
type gateLimiter struct {
	grants   chan error
	acquired atomic.Int32
	released atomic.Int32
	waiting  chan struct{} // receives when a caller starts waiting
}

func newGate() *gateLimiter {
	return &gateLimiter{grants: make(chan error), waiting: make(chan struct{}, 100)}
}

func (g *gateLimiter) Acquire(ctx context.Context) (func(), error) {
	g.waiting <- struct{}{}
	select {
	case err := <-g.grants:
		if err != nil {
			return nil, err
		}
		g.acquired.Add(1)
		var once sync.Once
		return func() { once.Do(func() { g.released.Add(1) }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *gateLimiter) grant(t *testing.T, err error) {
	t.Helper()
	select {
	case g.grants <- err:
	case <-time.After(wait):
		t.Fatal("nobody waited for admission")
	}
}

// recorder keeps the events a pool reports.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) list() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// kinds summarises events as "started 1", "finished 1", "done 1".
func (r *recorder) kinds() []string {
	var out []string
	for _, e := range r.list() {
		out = append(out, fmt.Sprintf("%v %d", e.Kind, e.Job.Seq))
	}
	return out
}

func feed(items ...string) chan Item {
	ch := make(chan Item, len(items))
	for _, s := range items {
		ch <- Item{Text: s}
	}
	close(ch)
	return ch
}

func nItems(n int) []string {
	var s []string
	for i := 1; i <= n; i++ {
		s = append(s, fmt.Sprint("item", i))
	}
	return s
}

// runPool runs p in the background and returns a function that waits for
// Run's error.
func runPool(ctx context.Context, p *Pool, items <-chan Item) func(t *testing.T) error {
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx, items) }()
	return func(t *testing.T) error {
		t.Helper()
		select {
		case err := <-errc:
			return err
		case <-time.After(wait):
			t.Fatal("Run did not return")
			return nil
		}
	}
}

func TestPoolCapsInFlightAndAssignsSlots(t *testing.T) {
	ex := newFakeExec()
	rec := &recorder{}
	p, err := NewPool(Options{Jobs: 3, Executor: ex, OnEvent: rec.on})
	if err != nil {
		t.Fatal(err)
	}
	done := runPool(context.Background(), p, feed(nItems(10)...))

	held := map[int]call{} // slot -> call
	for i := 0; i < 10; i++ {
		for len(held) < 3 && i+len(held) < 10 {
			c := ex.next(t)
			if c.job.Slot < 1 || c.job.Slot > 3 {
				t.Fatalf("job %d has slot %d, want 1..3", c.job.Seq, c.job.Slot)
			}
			if other, ok := held[c.job.Slot]; ok {
				t.Fatalf("jobs %d and %d both hold slot %d", other.job.Seq, c.job.Seq, c.job.Slot)
			}
			held[c.job.Slot] = c
		}
		// Finish the job in the middle slot if any, else any: slots free
		// out of order.
		slot := 2
		if _, ok := held[slot]; !ok {
			for s := range held {
				slot = s
				break
			}
		}
		held[slot].reply <- 0
		delete(held, slot)
	}
	if err := done(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := ex.peak.Load(); got != 3 {
		t.Errorf("peak jobs running = %d, want 3", got)
	}
	var doneSeqs []int64
	for _, e := range rec.list() {
		if e.InFlight > 3 || e.InFlight < 0 {
			t.Errorf("event %v %d reports %d in flight, want 0..3", e.Kind, e.Job.Seq, e.InFlight)
		}
		if e.Kind == JobDone {
			doneSeqs = append(doneSeqs, e.Job.Seq)
			if !e.Result.OK() {
				t.Errorf("job %d: %s, want ok", e.Job.Seq, e.Result.Status())
			}
		}
	}
	if len(doneSeqs) != 10 {
		t.Errorf("got %d JobDone events, want 10", len(doneSeqs))
	}
}

func TestPoolLowestFreeSlot(t *testing.T) {
	ex := newFakeExec()
	p, _ := NewPool(Options{Jobs: 3, Executor: ex})
	done := runPool(context.Background(), p, feed(nItems(4)...))
	calls := map[int64]call{}
	for range 3 {
		c := ex.next(t)
		calls[c.job.Seq] = c
	}
	for seq, slot := range map[int64]int{1: 1, 2: 2, 3: 3} {
		if got := calls[seq].job.Slot; got != slot {
			t.Errorf("job %d slot = %d, want %d", seq, got, slot)
		}
	}
	calls[2].reply <- 0
	c4 := ex.next(t)
	if c4.job.Seq != 4 || c4.job.Slot != 2 {
		t.Errorf("job %d got slot %d, want job 4 in slot 2 (the one freed)", c4.job.Seq, c4.job.Slot)
	}
	calls[1].reply <- 0
	calls[3].reply <- 0
	c4.reply <- 0
	done(t)
}

func TestPoolAdmitsEveryAttemptAndStampsIt(t *testing.T) {
	clock := throttletest.NewFakeClock(t0)
	ex := newFakeExec()
	gate := newGate()
	rec := &recorder{}
	p, _ := NewPool(Options{Jobs: 1, Executor: ex, Limiter: gate, Retries: 2, Clock: clock, OnEvent: rec.on})
	done := runPool(context.Background(), p, feed("a", "b"))

	// Item a fails twice, then succeeds; b succeeds at once.
	wantStarts := []struct {
		seq     int64
		attempt int
		code    int
	}{{1, 1, 1}, {1, 2, 7}, {1, 3, 0}, {2, 1, 0}}
	for i, w := range wantStarts {
		<-gate.waiting
		clock.Advance(time.Second) // admission waits 1s
		gate.grant(t, nil)
		c := ex.next(t)
		if c.job.Seq != w.seq || c.job.Attempt != w.attempt {
			t.Fatalf("start %d: job %d attempt %d, want job %d attempt %d", i, c.job.Seq, c.job.Attempt, w.seq, w.attempt)
		}
		if got := int(gate.acquired.Load()) - int(gate.released.Load()); got != 1 {
			t.Errorf("start %d: %d releases outstanding, want 1 (held while the job runs)", i, got)
		}
		clock.Advance(500 * time.Millisecond) // the job runs 0.5s
		c.reply <- w.code
	}
	if err := done(t); err != nil {
		t.Fatal(err)
	}
	if a, r := gate.acquired.Load(), gate.released.Load(); a != 4 || r != 4 {
		t.Errorf("acquired %d, released %d; want 4 and 4 (every attempt admitted and released)", a, r)
	}
	var starts []time.Time
	var retries []bool
	for _, e := range rec.list() {
		switch e.Kind {
		case JobStarted:
			starts = append(starts, e.Admitted)
			if e.Waited != time.Second {
				t.Errorf("job %d attempt %d waited %v, want 1s", e.Job.Seq, e.Job.Attempt, e.Waited)
			}
		case JobFinished:
			retries = append(retries, e.Retry)
			if e.Result.Runtime != 500*time.Millisecond {
				t.Errorf("job %d attempt %d runtime %v, want 500ms", e.Job.Seq, e.Job.Attempt, e.Result.Runtime)
			}
			if !e.Result.Start.Equal(starts[len(starts)-1]) {
				t.Errorf("job %d result start %v, want the admission instant %v", e.Job.Seq, e.Result.Start, starts[len(starts)-1])
			}
		case JobDone:
			if e.Job.Seq == 1 && (e.Job.Attempt != 3 || !e.Result.OK()) {
				t.Errorf("item 1 final: attempt %d %s, want attempt 3 ok", e.Job.Attempt, e.Result.Status())
			}
		}
	}
	wantAt := []time.Time{t0.Add(1 * time.Second), t0.Add(2500 * time.Millisecond), t0.Add(4 * time.Second), t0.Add(5500 * time.Millisecond)}
	for i := range wantAt {
		if i >= len(starts) || !starts[i].Equal(wantAt[i]) {
			t.Errorf("admissions at %v, want %v", starts, wantAt)
			break
		}
	}
	if want := []bool{true, true, false, false}; fmt.Sprint(retries) != fmt.Sprint(want) {
		t.Errorf("JobFinished.Retry = %v, want %v", retries, want)
	}
}

func TestPoolRetriesExhausted(t *testing.T) {
	ex := newFakeExec()
	rec := &recorder{}
	p, _ := NewPool(Options{Jobs: 2, Executor: ex, Retries: 1, OnEvent: rec.on})
	done := runPool(context.Background(), p, feed("a"))
	ex.next(t).reply <- 3
	c := ex.next(t)
	if c.job.Attempt != 2 {
		t.Fatalf("second call is attempt %d, want 2", c.job.Attempt)
	}
	c.reply <- 4
	done(t)
	ev := rec.list()
	last := ev[len(ev)-1]
	if last.Kind != JobDone || last.Result.ExitCode != 4 || last.Job.Attempt != 2 {
		t.Errorf("last event %v attempt %d exit %d, want done, attempt 2, exit 4", last.Kind, last.Job.Attempt, last.Result.ExitCode)
	}
}

// permExec fails every job permanently.
type permExec struct{ calls atomic.Int32 }

func (*permExec) Prepare(job *Job) error { job.Argv = []string{"x"}; return nil }
func (e *permExec) Execute(context.Context, *Job) *Result {
	e.calls.Add(1)
	return &Result{ExitCode: -1, Err: fmt.Errorf("start x: %w", ErrPermanent)}
}

func TestPoolDoesNotRetryPermanentFailures(t *testing.T) {
	ex := &permExec{}
	p, _ := NewPool(Options{Jobs: 1, Executor: ex, Retries: 5})
	if err := p.Run(context.Background(), feed("a", "b")); err != nil {
		t.Fatal(err)
	}
	if n := ex.calls.Load(); n != 2 {
		t.Errorf("Execute called %d times, want 2 (no retries of permanent failures)", n)
	}
}

func TestPoolFailsBadItemsWithoutAdmission(t *testing.T) {
	ex := newFakeExec()
	ex.prepErr = func(j *Job) error {
		if j.Item == "unparseable" {
			return fmt.Errorf("job %d: %w", j.Seq, ErrBadLine)
		}
		return nil
	}
	gate := newGate()
	rec := &recorder{}
	p, _ := NewPool(Options{Jobs: 1, Executor: ex, Limiter: gate, Retries: 3, OnEvent: rec.on})
	items := make(chan Item, 3)
	items <- Item{Err: ErrItemTooLong}
	items <- Item{Text: "unparseable"}
	items <- Item{Text: "fine"}
	close(items)
	done := runPool(context.Background(), p, items)
	<-gate.waiting
	gate.grant(t, nil)
	c := ex.next(t)
	if c.job.Seq != 3 {
		t.Errorf("first job to run is %d, want 3", c.job.Seq)
	}
	c.reply <- 0
	done(t)
	if n := gate.acquired.Load(); n != 1 {
		t.Errorf("limiter admitted %d jobs, want 1: bad items consume no quota", n)
	}
	var bad []string
	for _, e := range rec.list() {
		if e.Kind == JobStarted && e.Job.Seq != 3 {
			t.Errorf("job %d started, want it failed before starting", e.Job.Seq)
		}
		if e.Kind == JobDone && e.Job.Seq != 3 {
			bad = append(bad, fmt.Sprintf("%d %v", e.Job.Seq, e.Result.Err))
			if !errors.Is(e.Result.Err, ErrPermanent) || e.Result.OK() {
				t.Errorf("job %d: err %v, want a permanent failure", e.Job.Seq, e.Result.Err)
			}
		}
	}
	if len(bad) != 2 {
		t.Errorf("bad items reported: %q, want 2", bad)
	}
}

func TestPoolKeepOrder(t *testing.T) {
	ex := newFakeExec()
	rec := &recorder{}
	p, _ := NewPool(Options{Jobs: 2, Executor: ex, KeepOrder: true, OrderWindow: 3, OnEvent: rec.on})
	done := runPool(context.Background(), p, feed(nItems(5)...))
	c1, c2 := ex.next(t), ex.next(t)
	if c1.job.Seq == 2 {
		c1, c2 = c2, c1
	}
	c2.reply <- 0 // job 2 ends first; its result waits for job 1
	c3 := ex.next(t)
	if c3.job.Seq != 3 {
		t.Fatalf("third start is job %d, want 3", c3.job.Seq)
	}
	c3.reply <- 0 // now jobs 2 and 3 wait; job 4 is outside the window (1+3)
	c1.reply <- 0
	c4, c5 := ex.next(t), ex.next(t)
	c5.reply <- 0
	c4.reply <- 0
	done(t)

	var order []int64
	started4, finished1 := -1, -1
	for i, e := range rec.list() {
		switch {
		case e.Kind == JobDone:
			order = append(order, e.Job.Seq)
		case e.Kind == JobStarted && e.Job.Seq == 4:
			started4 = i
		case e.Kind == JobFinished && e.Job.Seq == 1:
			finished1 = i
		}
	}
	if fmt.Sprint(order) != "[1 2 3 4 5]" {
		t.Errorf("JobDone order %v, want [1 2 3 4 5]", order)
	}
	if started4 < finished1 {
		t.Errorf("job 4 started (event %d) before job 1 finished (event %d): window of 3 not kept\n%q", started4, finished1, rec.kinds())
	}
}

func TestPoolStopLetsRunningJobsFinish(t *testing.T) {
	ex := newFakeExec()
	gate := newGate()
	rec := &recorder{}
	p, _ := NewPool(Options{Jobs: 2, Executor: ex, Limiter: gate, Retries: 3, OnEvent: rec.on})
	items := make(chan Item) // endless: never closed
	go func() {
		for i := 0; ; i++ {
			select {
			case items <- Item{Text: fmt.Sprint(i)}:
			case <-time.After(wait):
				return
			}
		}
	}()
	done := runPool(context.Background(), p, items)
	<-gate.waiting
	gate.grant(t, nil)
	c1 := ex.next(t)
	<-gate.waiting
	gate.grant(t, nil)
	c2 := ex.next(t)
	c1.reply <- 1  // fails: a retry is queued, then waits for a slot... no: a slot is free
	<-gate.waiting // the retry (or next item) waits for admission
	p.Stop()
	p.Stop() // idempotent
	if c2.ctx.Err() != nil {
		t.Error("Stop cancelled a running job's context, want it left to finish")
	}
	c2.reply <- 0
	if err := done(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	started := 0
	for _, e := range rec.list() {
		if e.Kind == JobStarted {
			started++
		}
	}
	if started != 2 {
		t.Errorf("%d jobs started, want 2 (nothing admitted after Stop)", started)
	}
	if a, r := gate.acquired.Load(), gate.released.Load(); a != r {
		t.Errorf("acquired %d, released %d: slots leaked", a, r)
	}
}

func TestPoolStopBeforeRun(t *testing.T) {
	ex := newFakeExec()
	p, _ := NewPool(Options{Jobs: 2, Executor: ex})
	p.Stop()
	if err := p.Run(context.Background(), feed("a", "b")); err != nil {
		t.Fatal(err)
	}
	if n := len(ex.prepared); n != 0 {
		t.Errorf("%d jobs prepared after Stop, want 0", n)
	}
}

func TestPoolCancelKillsRunningJobs(t *testing.T) {
	ex := newFakeExec()
	ctx, cancel := context.WithCancel(context.Background())
	p, _ := NewPool(Options{Jobs: 2, Executor: ex})
	done := runPool(ctx, p, feed(nItems(5)...))
	ex.next(t)
	ex.next(t)
	cancel()
	if err := done(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if n := ex.cancelled.Load(); n != 2 {
		t.Errorf("%d running jobs saw the cancellation, want 2", n)
	}
}

func TestPoolLimiterFailureStopsAdmissions(t *testing.T) {
	backend := errors.New("backend down")
	ex := newFakeExec()
	gate := newGate()
	p, _ := NewPool(Options{Jobs: 2, Executor: ex, Limiter: gate})
	done := runPool(context.Background(), p, feed(nItems(5)...))
	<-gate.waiting
	gate.grant(t, nil)
	c := ex.next(t)
	<-gate.waiting
	gate.grant(t, backend)
	c.reply <- 0 // the running job still finishes
	err := done(t)
	if !errors.Is(err, backend) {
		t.Fatalf("Run = %v, want an error wrapping %v", err, backend)
	}
	if n := gate.acquired.Load(); n != 1 {
		t.Errorf("%d admissions, want 1", n)
	}
}

func TestPoolWithThrottleLimiter(t *testing.T) {
	// The real limiter with a fake clock: starts keep 2/s and 3/2s, and
	// each holds one of 2 slots while it runs.
	clock := throttletest.NewFakeClock(t0)
	rules := []throttle.Rule{{N: 2, Window: time.Second}, {N: 3, Window: 2 * time.Second}}
	lim, err := throttle.New(rules, throttle.WithClock(clock), throttle.WithMaxInFlight(2))
	if err != nil {
		t.Fatal(err)
	}
	ex := newFakeExec()
	rec := &recorder{}
	p, _ := NewPool(Options{Jobs: 2, Executor: ex, Limiter: lim, Clock: clock, OnEvent: rec.on})
	done := runPool(context.Background(), p, feed(nItems(7)...))
	// Whenever the limiter sleeps, move the clock to its deadline.
	stop := make(chan struct{})
	asleep := make(chan struct{})
	go func() {
		for {
			clock.BlockUntilTimers(1)
			select {
			case asleep <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); clock.NewTimer(time.Hour) }()
	for finished := 0; finished < 7; {
		select {
		case c := <-ex.calls:
			c.reply <- 0
			finished++
		case <-asleep:
			if next, ok := clock.Next(); ok {
				clock.Set(next)
			}
		case <-time.After(wait):
			t.Fatal("stuck")
		}
	}
	done(t)
	var starts []time.Time
	for _, e := range rec.list() {
		if e.Kind == JobStarted {
			starts = append(starts, e.Admitted)
		}
	}
	if len(starts) != 7 {
		t.Fatalf("%d starts, want 7", len(starts))
	}
	for _, r := range throttle.Check(rules, starts) {
		if r.Violations > 0 {
			t.Errorf("rule %v broken %d times; starts %v", r.Rule, r.Violations, starts)
		}
	}
	if s := lim.Stats(); s.InFlight != 0 || s.PeakInFlight > 2 {
		t.Errorf("limiter in flight %d peak %d, want 0 and <= 2", s.InFlight, s.PeakInFlight)
	}
}

func TestNewPoolRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Jobs: 0, Executor: newFakeExec()},
		{Jobs: 1},
		{Jobs: 1, Executor: newFakeExec(), Retries: -1},
	} {
		if _, err := NewPool(o); err == nil {
			t.Errorf("NewPool(%+v) = nil error, want one", o)
		}
	}
}

func TestPoolReadsItemsOnlyAsNeeded(t *testing.T) {
	// Endless input: the pool takes an item only when it can start it, so
	// memory stays bounded however fast items come.
	ex := newFakeExec()
	p, _ := NewPool(Options{Jobs: 2, Executor: ex})
	items := make(chan Item)
	var sent atomic.Int32
	stopFeed := make(chan struct{})
	go func() {
		for {
			select {
			case items <- Item{Text: "y"}:
				sent.Add(1)
			case <-stopFeed:
				return
			}
		}
	}()
	done := runPool(context.Background(), p, items)
	c1, c2 := ex.next(t), ex.next(t) // both slots busy: no reason to read on
	p.Stop()
	c1.reply <- 0
	c2.reply <- 0
	done(t)
	close(stopFeed)
	if n := sent.Load(); n != 2 {
		t.Errorf("pool took %d items in all, want exactly the 2 it ran", n)
	}
}
