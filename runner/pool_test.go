package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
)

// The pool tests run in synctest bubbles: time.Now and timers are fake and
// time moves only when every goroutine in the bubble is blocked, so the
// instants they check are exact and nothing sleeps for real. A pool that
// hangs makes the bubble deadlock, which fails the test with the stacks.

// fakeExec is an Executor whose jobs do what run says; without run they
// succeed at once. It records what it was asked.
type fakeExec struct {
	// prep, if set, ends Prepare; its error fails the job.
	prep func(*Job) error
	// run, if set, runs the job.
	run func(ctx context.Context, job *Job) *Result

	mu       sync.Mutex
	prepared []Job
	executed []Job
	running  int
	peak     int
}

func (f *fakeExec) Prepare(job *Job) error {
	job.Argv = []string{"fake", job.Item}
	f.mu.Lock()
	f.prepared = append(f.prepared, *job)
	f.mu.Unlock()
	if f.prep != nil {
		return f.prep(job)
	}
	return nil
}

func (f *fakeExec) Execute(ctx context.Context, job *Job) *Result {
	f.mu.Lock()
	f.executed = append(f.executed, *job)
	f.running++
	f.peak = max(f.peak, f.running)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	if f.run == nil {
		return &Result{}
	}
	return f.run(ctx, job)
}

// preparedSeqs returns the Seq of every job prepared, in order.
func (f *fakeExec) preparedSeqs() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s []int64
	for _, j := range f.prepared {
		s = append(s, j.Seq)
	}
	return s
}

// executions returns the number of Execute calls.
func (f *fakeExec) executions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.executed)
}

// killed is what a fake job returns when its context ends.
func killed() *Result { return &Result{ExitCode: -1, Signal: 9} }

// sleepCtx sleeps for d and reports true, or reports false as soon as ctx
// is done.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// hold returns a run function whose jobs take d and exit 0.
func hold(d time.Duration) func(context.Context, *Job) *Result {
	return func(ctx context.Context, _ *Job) *Result {
		if !sleepCtx(ctx, d) {
			return killed()
		}
		return &Result{}
	}
}

// call is one job handed to the test by handOff, waiting for its result.
type call struct {
	job   Job
	ctx   context.Context
	reply chan *Result
}

// exit ends the call's job with exit code code.
func (c call) exit(code int) { c.reply <- &Result{ExitCode: code} }

// handOff returns a run function that hands every job to the test through
// calls and returns the result the test replies with. A job whose context
// ends first is killed.
func handOff(calls chan<- call) func(context.Context, *Job) *Result {
	return func(ctx context.Context, job *Job) *Result {
		c := call{job: *job, ctx: ctx, reply: make(chan *Result, 1)}
		select {
		case calls <- c:
		case <-ctx.Done():
			return killed()
		}
		select {
		case r := <-c.reply:
			return r
		case <-ctx.Done():
			return killed()
		}
	}
}

// nextCall returns a job that is running, once the bubble is idle.
func nextCall(t *testing.T, calls <-chan call) call {
	t.Helper()
	synctest.Wait()
	select {
	case c := <-calls:
		return c
	default:
		t.Fatal("no job running, want one")
		return call{}
	}
}

// noCall checks that no job is running, once the bubble is idle.
func noCall(t *testing.T, calls <-chan call) {
	t.Helper()
	synctest.Wait()
	select {
	case c := <-calls:
		t.Fatalf("job %d (%q) running, want none", c.job.Seq, c.job.Item)
	default:
	}
}

// correction is one Correct a fakeLimiter received.
type correction struct {
	id       uint64
	at       time.Time
	from, to int
	released bool // the admission had been released before
}

// fakeLimiter admits after wait, or, with a gate, when the test grants
// it; it owns the admissions it hands out and records what happens to
// them.
type fakeLimiter struct {
	wait         time.Duration
	latency      time.Duration // Admission.Latency
	gate         chan error    // if set, each Admit takes its answer from it
	correctErr   error         // what Correct returns
	correctHangs bool          // Correct waits for its context to end, as for a store that does not answer

	mu          sync.Mutex
	costs       []int // of every Admit call
	admitted    []time.Time
	released    map[uint64]bool
	corrections []correction
}

func (l *fakeLimiter) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	start := time.Now()
	l.mu.Lock()
	l.costs = append(l.costs, cost)
	id := uint64(len(l.costs))
	l.mu.Unlock()
	if l.gate != nil {
		select {
		case err := <-l.gate:
			if err != nil {
				return throttle.Admission{}, err
			}
		case <-ctx.Done():
			return throttle.Admission{}, ctx.Err()
		}
	}
	if !sleepCtx(ctx, l.wait) {
		return throttle.Admission{}, ctx.Err()
	}
	l.mu.Lock()
	l.admitted = append(l.admitted, time.Now())
	l.mu.Unlock()
	// The backend recorded the call latency before Admit returns.
	return backend.NewAdmission(l, id, id, time.Now().Add(-l.latency), cost, time.Since(start), l.latency), nil
}

func (l *fakeLimiter) Release(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released == nil {
		l.released = map[uint64]bool{}
	}
	l.released[id] = true
}

func (l *fakeLimiter) Correct(ctx context.Context, id uint64, at time.Time, from, to int) error {
	l.mu.Lock()
	l.corrections = append(l.corrections, correction{id, at, from, to, l.released[id]})
	l.mu.Unlock()
	if l.correctHangs {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.correctErr
}

// grant answers the Admit waiting at the gate with err.
func (l *fakeLimiter) grant(t *testing.T, err error) {
	t.Helper()
	synctest.Wait()
	select {
	case l.gate <- err:
	default:
		t.Fatal("nobody waits for admission")
	}
}

// counts returns how many Admit calls came, how many were admitted and how
// many admissions were released.
func (l *fakeLimiter) counts() (calls, admitted, released int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.costs), len(l.admitted), len(l.released)
}

// event is an Event and when it came.
type event struct {
	Event
	at time.Time
}

// recorder keeps the events a pool reports.
type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{e, time.Now()})
}

func (r *recorder) list() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// of returns the events of kind k.
func (r *recorder) of(k EventKind) []event {
	var out []event
	for _, e := range r.list() {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// kinds summarises the events as "started 1/1", "finished 1/1", "done
// 1/1": kind, Seq and Attempt.
func (r *recorder) kinds() []string {
	var out []string
	for _, e := range r.list() {
		out = append(out, fmt.Sprintf("%v %d/%d", e.Kind, e.Job.Seq, e.Job.Attempt))
	}
	return out
}

// doneSeqs returns the Seq of every JobDone, in order.
func (r *recorder) doneSeqs() []int64 {
	var s []int64
	for _, e := range r.of(JobDone) {
		s = append(s, e.Job.Seq)
	}
	return s
}

// feed returns a closed channel holding one item per text.
func feed(texts ...string) chan Item {
	ch := make(chan Item, len(texts))
	for _, s := range texts {
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

// endless feeds items until stop is called, which returns how many the
// pool took.
func endless() (items chan Item, stop func() int) {
	items = make(chan Item)
	quit := make(chan struct{})
	taken := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case items <- Item{Text: fmt.Sprint("item", n+1)}:
				n++
			case <-quit:
				taken <- n
				return
			}
		}
	}()
	return items, func() int { close(quit); return <-taken }
}

func newPool(t *testing.T, opts Options) *Pool {
	t.Helper()
	p, err := NewPool(opts)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	return p
}

// runBackground runs p in a goroutine; the function it returns waits for
// Run to return and returns its error.
func runBackground(ctx context.Context, p *Pool, items <-chan Item) func() error {
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx, items) }()
	return func() error { return <-errc }
}

func TestNewPoolRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no jobs", Options{Jobs: 0, Executor: &fakeExec{}}, "jobs = 0"},
		{"negative jobs", Options{Jobs: -3, Executor: &fakeExec{}}, "jobs = -3"},
		{"no executor", Options{Jobs: 1}, "no executor"},
		{"negative retries", Options{Jobs: 1, Executor: &fakeExec{}, Retries: -1}, "retries = -1"},
	}
	for _, tt := range tests {
		p, err := NewPool(tt.opts)
		if err == nil || p != nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewPool(%+v) = %v, %v; want nil and an error containing %q", tt.name, tt.opts, p, err, tt.want)
		}
	}
}

func TestPoolCapsInFlightAndAssignsSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		inUse := map[int]int64{} // slot -> job holding it
		ex := &fakeExec{}
		ex.run = func(ctx context.Context, job *Job) *Result {
			mu.Lock()
			if job.Slot < 1 || job.Slot > 3 {
				t.Errorf("job %d has slot %d, want 1..3", job.Seq, job.Slot)
			}
			if other, ok := inUse[job.Slot]; ok {
				t.Errorf("jobs %d and %d both hold slot %d", other, job.Seq, job.Slot)
			}
			inUse[job.Slot] = job.Seq
			mu.Unlock()
			// Lengths that make slots free out of order.
			sleepCtx(ctx, time.Duration(job.Seq*7%5+1)*100*time.Millisecond)
			mu.Lock()
			delete(inUse, job.Slot)
			mu.Unlock()
			return &Result{}
		}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 3, Executor: ex, OnEvent: rec.on})
		if err := p.Run(context.Background(), feed(nItems(10)...)); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if ex.peak != 3 {
			t.Errorf("peak jobs running = %d, want 3", ex.peak)
		}
		for _, e := range rec.list() {
			if e.InFlight < 0 || e.InFlight > 3 {
				t.Errorf("event %v %d reports %d in flight, want 0..3", e.Kind, e.Job.Seq, e.InFlight)
			}
		}
		done := rec.of(JobDone)
		if len(done) != 10 {
			t.Errorf("%d JobDone events, want 10", len(done))
		}
		for _, e := range done {
			if !e.Result.OK() {
				t.Errorf("job %d: %s, want ok", e.Job.Seq, e.Result.Status())
			}
		}
	})
}

// TestPoolLowestFreeSlot: a job takes the lowest free slot, whatever order
// the slots were freed in.
func TestPoolLowestFreeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := make(chan call)
		p := newPool(t, Options{Jobs: 4, Executor: &fakeExec{run: handOff(calls)}})
		items := make(chan Item) // the test feeds items one at a time
		wait := runBackground(context.Background(), p, items)
		running := map[int64]call{}
		startItem := func(seq int64, wantSlot int) {
			t.Helper()
			items <- Item{Text: fmt.Sprint("item", seq)}
			c := nextCall(t, calls)
			if c.job.Seq != seq || c.job.Slot != wantSlot {
				t.Errorf("job %d started in slot %d, want job %d in slot %d", c.job.Seq, c.job.Slot, seq, wantSlot)
			}
			running[c.job.Seq] = c
		}
		for seq := int64(1); seq <= 4; seq++ {
			startItem(seq, int(seq))
		}
		// Free slots 3, 1, 4 in that order: a queue would give 3 first,
		// a stack 4.
		for _, seq := range []int64{3, 1, 4} {
			running[seq].exit(0)
			delete(running, seq)
			synctest.Wait()
		}
		startItem(5, 1)
		startItem(6, 3)
		startItem(7, 4)
		close(items)
		for _, c := range running {
			c.exit(0)
		}
		if err := wait(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	})
}

// TestPoolAllocatesSlotsLazily: with -j 100000 and 3 items only slots 1..3
// are handed out, and the run allocates no more than one with -j 3.
func TestPoolAllocatesSlotsLazily(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := make(chan call)
		p := newPool(t, Options{Jobs: 100_000, Executor: &fakeExec{run: handOff(calls)}})
		wait := runBackground(context.Background(), p, feed("a", "b", "c"))
		var slots []int
		var running []call
		for range 3 {
			c := nextCall(t, calls)
			slots = append(slots, c.job.Slot)
			running = append(running, c)
		}
		noCall(t, calls)
		slices.Sort(slots)
		if !slices.Equal(slots, []int{1, 2, 3}) {
			t.Errorf("slots %v, want [1 2 3]", slots)
		}
		for _, c := range running {
			c.exit(0)
		}
		if err := wait(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	})

	// Bytes allocated by one run of 3 instant items, the least of a few
	// runs so that a stray allocation elsewhere does not count.
	allocated := func(jobs int, keepOrder bool) uint64 {
		least := uint64(math.MaxUint64)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			p, err := NewPool(Options{Jobs: jobs, Executor: &fakeExec{}, KeepOrder: keepOrder})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(context.Background(), feed("a", "b", "c")); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		return least
	}
	for _, keepOrder := range []bool{false, true} {
		small, big := allocated(3, keepOrder), allocated(100_000, keepOrder)
		// Anything kept per slot (even a byte) would cost 100 KB.
		if big > small+32<<10 {
			t.Errorf("KeepOrder %v: Run with Jobs 100000 allocated %d bytes, with Jobs 3 %d; want about the same",
				keepOrder, big, small)
		}
	}
}

// TestPoolAdmitsEveryAttemptAndStampsIt: every attempt, retries included,
// is admitted and holds its admission while it runs; results carry the
// admission's instant and wait.
func TestPoolAdmitsEveryAttemptAndStampsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		lim := &fakeLimiter{wait: time.Second}
		// Item a fails twice, then succeeds; b succeeds at once.
		codes := map[string][]int{"a": {1, 7, 0}, "b": {0}}
		ex := &fakeExec{run: func(ctx context.Context, job *Job) *Result {
			if _, admitted, released := lim.counts(); admitted-released != 1 {
				t.Errorf("job %d attempt %d runs with %d admissions held, want 1", job.Seq, job.Attempt, admitted-released)
			}
			sleepCtx(ctx, 500*time.Millisecond)
			return &Result{ExitCode: codes[job.Item][job.Attempt-1]}
		}}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 1, Executor: ex, Limiter: lim, Retries: 2, OnEvent: rec.on})
		if err := p.Run(context.Background(), feed("a", "b")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if calls, admitted, released := lim.counts(); calls != 4 || admitted != 4 || released != 4 {
			t.Errorf("Admit called %d times, admitted %d, released %d; want 4, 4, 4", calls, admitted, released)
		}
		want := []string{
			"started 1/1", "finished 1/1", "started 1/2", "finished 1/2", "started 1/3", "finished 1/3", "done 1/3",
			"started 2/1", "finished 2/1", "done 2/1",
		}
		if got := rec.kinds(); !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
		// Each admission waits 1s after the previous attempt's 0.5s.
		wantAt := []time.Duration{1000 * time.Millisecond, 2500 * time.Millisecond, 4000 * time.Millisecond, 5500 * time.Millisecond}
		started, finished := rec.of(JobStarted), rec.of(JobFinished)
		if len(started) != 4 || len(finished) != 4 {
			t.Fatalf("%d started, %d finished, want 4 and 4", len(started), len(finished))
		}
		for i, s := range started {
			f := finished[i]
			a := s.Admission
			if a.At.Sub(t0) != wantAt[i] || a.Waited != time.Second {
				t.Errorf("attempt %d/%d: admission %+v, want at t0+%v after waiting 1s", s.Job.Seq, s.Job.Attempt, a, wantAt[i])
				continue
			}
			r := f.Result
			if !r.Start.Equal(a.At) || r.Waited != time.Second || r.Runtime != 500*time.Millisecond {
				t.Errorf("attempt %d/%d: result start t0+%v, waited %v, runtime %v; want t0+%v, 1s, 500ms",
					f.Job.Seq, f.Job.Attempt, r.Start.Sub(t0), r.Waited, r.Runtime, wantAt[i])
			}
			if r.Job.Slot != 1 || r.Job.Attempt != s.Job.Attempt || !slices.Equal(r.Job.Argv, []string{"fake", s.Job.Item}) {
				t.Errorf("attempt %d/%d: result job %+v, want the job that started", f.Job.Seq, f.Job.Attempt, r.Job)
			}
		}
		var retries []bool
		for _, f := range finished {
			retries = append(retries, f.Retry)
		}
		if want := []bool{true, true, false, false}; !slices.Equal(retries, want) {
			t.Errorf("JobFinished.Retry = %v, want %v", retries, want)
		}
		if d := rec.of(JobDone)[0]; d.Job.Attempt != 3 || !d.Result.OK() {
			t.Errorf("item 1 final: attempt %d %s, want attempt 3 ok", d.Job.Attempt, d.Result.Status())
		}
	})
}

func TestPoolRetriesExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{run: func(_ context.Context, job *Job) *Result { return &Result{ExitCode: 2 + job.Attempt} }}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 2, Executor: ex, Retries: 1, OnEvent: rec.on})
		if err := p.Run(context.Background(), feed("a")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		want := []string{"started 1/1", "finished 1/1", "started 1/2", "finished 1/2", "done 1/2"}
		if got := rec.kinds(); !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
		if d := rec.of(JobDone); len(d) != 1 || d[0].Result.ExitCode != 4 {
			t.Errorf("final result %+v, want attempt 2's exit 4", d)
		}
	})
}

func TestPoolDoesNotRetryPermanentFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{run: func(_ context.Context, job *Job) *Result {
			if job.Item == "wrapped" {
				return &Result{ExitCode: -1, Err: fmt.Errorf("start x: %w", ErrPermanent)}
			}
			return &Result{ExitCode: -1, Err: Permanent(errors.New("start y: no such file"))}
		}}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 1, Executor: ex, Retries: 5, OnEvent: rec.on})
		if err := p.Run(context.Background(), feed("wrapped", "marked")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if n := ex.executions(); n != 2 {
			t.Errorf("Execute called %d times, want 2 (no retries of permanent failures)", n)
		}
		for _, f := range rec.of(JobFinished) {
			if f.Retry {
				t.Errorf("job %d: JobFinished.Retry = true for %v, want false", f.Job.Seq, f.Result.Err)
			}
		}
		if d := rec.of(JobDone); len(d) != 2 || d[1].Result.Status() != "start y: no such file" {
			t.Errorf("JobDone events %+v, want 2, the second with status %q", d, "start y: no such file")
		}
	})
}

// TestPoolFailsBadItemsWithoutAdmission: an item that could not be read
// and a job that cannot be prepared fail without being admitted.
func TestPoolFailsBadItemsWithoutAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errTooLong := errors.New("item too long")
		errBadLine := errors.New("unbalanced quote")
		ex := &fakeExec{prep: func(j *Job) error {
			if j.Item == "unparseable" {
				return Permanent(fmt.Errorf("job %d: %w", j.Seq, errBadLine))
			}
			return nil
		}}
		lim := &fakeLimiter{}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 1, Executor: ex, Limiter: lim, Retries: 3, OnEvent: rec.on})
		items := make(chan Item, 3)
		items <- Item{Err: errTooLong}
		items <- Item{Text: "unparseable"}
		items <- Item{Text: "fine"}
		close(items)
		if err := p.Run(context.Background(), items); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if calls, _, _ := lim.counts(); calls != 1 {
			t.Errorf("Admit called %d times, want 1: bad items consume no quota", calls)
		}
		want := []string{"done 1/1", "done 2/1", "started 3/1", "finished 3/1", "done 3/1"}
		if got := rec.kinds(); !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
		done := rec.of(JobDone)
		for i, wantErr := range []error{errTooLong, errBadLine} {
			r := done[i].Result
			if !errors.Is(r.Err, wantErr) || r.OK() || r.ExitCode != -1 || !r.Start.IsZero() {
				t.Errorf("job %d: err %v, exit %d, start %v; want %v, exit -1, never admitted", r.Job.Seq, r.Err, r.ExitCode, r.Start, wantErr)
			}
		}
		if r := done[2].Result; !r.OK() || r.Job.Slot != 1 {
			t.Errorf("job 3: %s in slot %d, want ok in slot 1 (the bad items' slot given back)", r.Status(), r.Job.Slot)
		}
	})
}

// TestPoolPassesColumnsAndSkips: an item's columns reach the job, and a
// skipped item takes its Seq but has no events and does not hold up the
// order.
func TestPoolPassesColumnsAndSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 2, Executor: ex, KeepOrder: true, OnEvent: rec.on})
		items := make(chan Item, 3)
		items <- Item{Text: "a\t1", Cols: []string{"a", "1"}}
		items <- Item{Text: "done before", Skip: true}
		items <- Item{Text: "c"}
		close(items)
		if err := p.Run(context.Background(), items); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if got := ex.preparedSeqs(); !slices.Equal(got, []int64{1, 3}) {
			t.Errorf("prepared jobs %v, want [1 3]", got)
		}
		for _, e := range rec.list() {
			if e.Job.Seq == 2 {
				t.Errorf("event %v for the skipped item", e.Kind)
			}
		}
		if got := rec.doneSeqs(); !slices.Equal(got, []int64{1, 3}) {
			t.Errorf("JobDone order %v, want [1 3]", got)
		}
		ex.mu.Lock()
		defer ex.mu.Unlock()
		cols := map[int64][]string{}
		for _, j := range ex.executed {
			cols[j.Seq] = j.Cols
		}
		if !slices.Equal(cols[1], []string{"a", "1"}) || cols[3] != nil {
			t.Errorf("job columns %q and %q, want [a 1] and none", cols[1], cols[3])
		}
	})
}

// TestPoolKeepOrderWindow: with KeepOrder, results come in input order,
// and while item 1 runs no item more than OrderWindow after it starts.
func TestPoolKeepOrderWindow(t *testing.T) {
	tests := []struct {
		jobs, window int
		wantAhead    int // items started while item 1 runs, itself included
	}{
		{jobs: 2, window: 3, wantAhead: 3},
		{jobs: 2, window: 0, wantAhead: 8}, // 0: 4 × jobs
		{jobs: 3, window: 1, wantAhead: 1},
		{jobs: 4, window: 100, wantAhead: 12},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("jobs=%d,window=%d", tt.jobs, tt.window), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				ex := &fakeExec{run: func(ctx context.Context, job *Job) *Result {
					if job.Seq == 1 {
						<-release
					}
					return &Result{}
				}}
				rec := &recorder{}
				p := newPool(t, Options{Jobs: tt.jobs, Executor: ex, KeepOrder: true, OrderWindow: tt.window, OnEvent: rec.on})
				wait := runBackground(context.Background(), p, feed(nItems(12)...))
				synctest.Wait()
				if got := ex.executions(); got != tt.wantAhead {
					t.Errorf("%d items started while item 1 runs, want %d", got, tt.wantAhead)
				}
				if d := rec.of(JobDone); len(d) != 0 {
					t.Errorf("%d JobDone events before item 1 ended, want none", len(d))
				}
				close(release)
				if err := wait(); err != nil {
					t.Fatalf("Run = %v, want nil", err)
				}
				if got, want := rec.doneSeqs(), []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; !slices.Equal(got, want) {
					t.Errorf("JobDone order %v, want %v", got, want)
				}
			})
		})
	}
}

// TestPoolRetryDelay: a retry is admitted exactly RetryDelay after its
// failed attempt ended, and other items run meanwhile.
func TestPoolRetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		ex := &fakeExec{run: func(ctx context.Context, job *Job) *Result {
			switch {
			case job.Item == "a" && job.Attempt == 1:
				sleepCtx(ctx, 100*time.Millisecond)
				return &Result{ExitCode: 1}
			case job.Item == "b":
				sleepCtx(ctx, time.Second)
			}
			return &Result{}
		}}
		var asked []string
		rec := &recorder{}
		p := newPool(t, Options{
			Jobs: 2, Executor: ex, Retries: 1, Limiter: &fakeLimiter{}, OnEvent: rec.on,
			RetryDelay: func(r *Result) time.Duration {
				asked = append(asked, fmt.Sprintf("%d/%d exit %d", r.Job.Seq, r.Job.Attempt, r.ExitCode))
				return 3 * time.Second
			},
		})
		if err := p.Run(context.Background(), feed("a", "b", "c")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if want := []string{"1/1 exit 1"}; !slices.Equal(asked, want) {
			t.Errorf("RetryDelay asked about %q, want %q", asked, want)
		}
		var got []string
		for _, e := range rec.of(JobStarted) {
			got = append(got, fmt.Sprintf("%d/%d at +%v", e.Job.Seq, e.Job.Attempt, e.Admission.At.Sub(t0)))
		}
		want := []string{"1/1 at +0s", "2/1 at +0s", "3/1 at +100ms", "1/2 at +3.1s"}
		if !slices.Equal(got, want) {
			t.Errorf("starts %q, want %q", got, want)
		}
	})
}

// TestPoolRequeuesJobsNotStarted: an attempt that could not start for lack
// of resources is tried again as the same attempt, after 50ms, 100ms,
// 200ms..., without a JobFinished and without using a retry.
func TestPoolRequeuesJobsNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		tries := 0 // of item a, one at a time
		ex := &fakeExec{run: func(ctx context.Context, job *Job) *Result {
			if job.Item == "b" {
				sleepCtx(ctx, time.Second)
				return &Result{}
			}
			if tries++; tries <= 3 {
				return &Result{ExitCode: -1, Err: fmt.Errorf("job %d: start: %w", job.Seq, ErrNotStarted)}
			}
			return &Result{}
		}}
		lim := &fakeLimiter{}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 2, Executor: ex, Limiter: lim, OnEvent: rec.on}) // no retries
		if err := p.Run(context.Background(), feed("a", "b")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		var gotA []string
		for _, e := range rec.list() {
			if e.Job.Seq == 1 {
				gotA = append(gotA, fmt.Sprintf("%v %d/%d at +%v", e.Kind, e.Job.Seq, e.Job.Attempt, e.at.Sub(t0)))
			}
		}
		want := []string{
			"started 1/1 at +0s", "not started 1/1 at +0s",
			"started 1/1 at +50ms", "not started 1/1 at +50ms",
			"started 1/1 at +150ms", "not started 1/1 at +150ms",
			"started 1/1 at +350ms", "finished 1/1 at +350ms", "done 1/1 at +350ms",
		}
		if !slices.Equal(gotA, want) {
			t.Errorf("item 1 events\n%q, want\n%q", gotA, want)
		}
		for _, e := range rec.of(JobNotStarted) {
			if !errors.Is(e.Result.Err, ErrNotStarted) || e.Retry {
				t.Errorf("JobNotStarted: err %v, retry %v; want ErrNotStarted, false", e.Result.Err, e.Retry)
			}
		}
		if d := rec.of(JobDone); len(d) != 2 || !d[0].Result.OK() || !d[1].Result.OK() {
			t.Errorf("JobDone events %+v, want both items ok", d)
		}
		if calls, admitted, released := lim.counts(); calls != 5 || admitted != 5 || released != 5 {
			t.Errorf("Admit called %d times, admitted %d, released %d; want 5 each (every try is admitted)", calls, admitted, released)
		}
	})
}

// TestPoolGivesUpOnJobsNotStarted: after 20 tries that could not start,
// with the backoff doubling to a second, the attempt fails as any other.
func TestPoolGivesUpOnJobsNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{run: func(context.Context, *Job) *Result {
			return &Result{ExitCode: -1, Err: fmt.Errorf("fork: %w", ErrNotStarted)}
		}}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 1, Executor: ex, OnEvent: rec.on})
		if err := p.Run(context.Background(), feed("a")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if n := ex.executions(); n != 21 {
			t.Errorf("Execute called %d times, want 21", n)
		}
		if n := len(rec.of(JobNotStarted)); n != 20 {
			t.Errorf("%d JobNotStarted events, want 20", n)
		}
		started := rec.of(JobStarted)
		for i := 1; i < len(started); i++ {
			gap := started[i].at.Sub(started[i-1].at)
			want := min(50*time.Millisecond<<(i-1), time.Second)
			if gap != want || started[i].Job.Attempt != 1 {
				t.Errorf("try %d: attempt %d, %v after the previous, want attempt 1, %v", i+1, started[i].Job.Attempt, gap, want)
			}
		}
		fin, done := rec.of(JobFinished), rec.of(JobDone)
		if len(fin) != 1 || fin[0].Retry || len(done) != 1 || !errors.Is(done[0].Result.Err, ErrNotStarted) {
			t.Errorf("finished %+v, done %+v; want one of each, failed with ErrNotStarted", fin, done)
		}
	})
}

// TestPoolStopDropsJobNotStarted: a job waiting to be tried again after a
// failure to start has no attempt to report when the pool stops: it is
// dropped like an item never read, and Run does not wait for its backoff.
func TestPoolStopDropsJobNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{run: func(context.Context, *Job) *Result {
			return &Result{ExitCode: -1, Err: ErrNotStarted}
		}}
		rec := &recorder{}
		var p *Pool
		p = newPool(t, Options{Jobs: 1, Executor: ex, OnEvent: func(e Event) {
			rec.on(e)
			if e.Kind == JobNotStarted {
				p.Stop()
			}
		}})
		start := time.Now()
		if err := p.Run(context.Background(), feed("a", "b")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Run took %v, want it to return at once", d)
		}
		if got, want := rec.kinds(), []string{"started 1/1", "not started 1/1"}; !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

// TestPoolCorrectsCost: the pool asks the limiter for Job.Cost (0 means
// 1) and, when the result says what the call really cost, corrects the
// admission before releasing it.
func TestPoolCorrectsCost(t *testing.T) {
	tests := []struct {
		name               string
		estimate, trueCost int
		correctErr         error
		wantAdmit          int
		wantCorrect        bool
	}{
		{"no estimate, no true cost", 0, 0, nil, 1, false},
		{"true cost higher", 5, 7, nil, 5, true},
		{"true cost lower", 3, 1, nil, 3, true},
		{"true cost as estimated", 5, 5, nil, 5, false},
		{"no estimate, true cost 4", 0, 4, nil, 1, true},
		{"correction fails", 2, 9, throttle.ErrBackend, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ex := &fakeExec{
					prep: func(j *Job) error { j.Cost = tt.estimate; return nil },
					run: func(ctx context.Context, _ *Job) *Result {
						sleepCtx(ctx, time.Second)
						return &Result{Cost: tt.trueCost}
					},
				}
				lim := &fakeLimiter{correctErr: tt.correctErr}
				rec := &recorder{}
				p := newPool(t, Options{Jobs: 1, Executor: ex, Limiter: lim, OnEvent: rec.on})
				if err := p.Run(context.Background(), feed("a")); err != nil {
					t.Fatalf("Run = %v, want nil", err)
				}
				lim.mu.Lock()
				defer lim.mu.Unlock()
				if !slices.Equal(lim.costs, []int{tt.wantAdmit}) || len(lim.released) != 1 {
					t.Errorf("Admit costs %v, %d released; want [%d], 1", lim.costs, len(lim.released), tt.wantAdmit)
				}
				var want []correction
				if tt.wantCorrect {
					at := rec.of(JobStarted)[0].Admission.At
					want = []correction{{id: 1, at: at, from: tt.wantAdmit, to: tt.trueCost}}
				}
				if !slices.Equal(lim.corrections, want) {
					t.Errorf("corrections %+v, want %+v (before the release)", lim.corrections, want)
				}
				if d := rec.of(JobDone); len(d) != 1 || !d[0].Result.OK() || d[0].Result.Cost != tt.trueCost {
					t.Errorf("JobDone %+v, want one ok result of cost %d", d, tt.trueCost)
				}
			})
		})
	}
}

// TestPoolKillEndsCorrection: a correction that waits on a store that
// does not answer ends when the jobs are killed (Run's context), and Run
// returns then, the admission released.
func TestPoolKillEndsCorrection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{
			prep: func(j *Job) error { j.Cost = 2; return nil },
			run:  func(context.Context, *Job) *Result { return &Result{Cost: 5} },
		}
		lim := &fakeLimiter{correctHangs: true}
		p := newPool(t, Options{Jobs: 1, Executor: ex, Limiter: lim})
		ctx, kill := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, kill)
		start := time.Now()
		if err := p.Run(ctx, feed("a")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("Run returned after %v, want when the jobs were killed (1s)", d)
		}
		if calls, _, released := lim.counts(); calls != 1 || released != 1 || len(lim.corrections) != 1 {
			t.Errorf("%d admissions, %d released, %d corrections; want 1 of each", calls, released, len(lim.corrections))
		}
	})
}

// TestPoolLag: Lag is the admission's latency plus the time from the
// admission's return to Sent, however long admission waited; zero without
// Sent.
func TestPoolLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{run: func(ctx context.Context, job *Job) *Result {
			var r Result
			sleepCtx(ctx, 30*time.Millisecond)
			if job.Item == "sent" {
				r.Sent = time.Now()
			}
			sleepCtx(ctx, 70*time.Millisecond)
			return &r
		}}
		lim := &fakeLimiter{wait: time.Second, latency: 20 * time.Millisecond}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 1, Executor: ex, Limiter: lim, OnEvent: rec.on})
		t0 := time.Now()
		if err := p.Run(context.Background(), feed("sent", "unknown")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		done := rec.of(JobDone)
		if len(done) != 2 {
			t.Fatalf("%d JobDone events, want 2", len(done))
		}
		if r := done[0].Result; r.Lag != 50*time.Millisecond || r.Runtime != 100*time.Millisecond || r.Waited != time.Second {
			t.Errorf("sent after 30ms: lag %v, runtime %v, waited %v; want 50ms (20ms latency + 30ms), 100ms, 1s", r.Lag, r.Runtime, r.Waited)
		}
		// Start is the backend's instant, 20ms before Admit returned.
		if r := done[0].Result; r.Start.Sub(t0) != 980*time.Millisecond {
			t.Errorf("start t0+%v, want the admission's instant t0+980ms", r.Start.Sub(t0))
		}
		if r := done[1].Result; r.Lag != 0 || !r.Sent.IsZero() {
			t.Errorf("no Sent: lag %v, sent %v; want 0 and zero", r.Lag, r.Sent)
		}
	})
}

// TestPoolStopLetsRunningJobsFinish: after Stop nothing more is admitted
// or read, the retry waiting for admission fails with its last result,
// and running jobs finish undisturbed.
func TestPoolStopLetsRunningJobsFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := make(chan call)
		ex := &fakeExec{run: handOff(calls)}
		lim := &fakeLimiter{gate: make(chan error)}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 2, Executor: ex, Limiter: lim, Retries: 3, OnEvent: rec.on})
		items, stopFeed := endless()
		wait := runBackground(context.Background(), p, items)
		lim.grant(t, nil)
		c1 := nextCall(t, calls)
		lim.grant(t, nil)
		c2 := nextCall(t, calls)
		c1.exit(1) // fails: its retry waits for admission
		synctest.Wait()
		if n, _, _ := lim.counts(); n != 3 {
			t.Fatalf("Admit called %d times, want 3 (the retry waiting)", n)
		}
		p.Stop()
		p.Stop() // idempotent
		synctest.Wait()
		if err := c2.ctx.Err(); err != nil {
			t.Errorf("Stop cancelled a running job's context (%v), want it left to finish", err)
		}
		c2.exit(0)
		if err := wait(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if n := stopFeed(); n != 2 {
			t.Errorf("pool took %d items, want the 2 it ran", n)
		}
		want := []string{"started 1/1", "started 2/1", "finished 1/1", "done 1/1", "finished 2/1", "done 2/1"}
		if got := rec.kinds(); !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
		if d := rec.of(JobDone); len(d) == 2 && (d[0].Result.ExitCode != 1 || !d[1].Result.OK()) {
			t.Errorf("final results %s and %s, want exit status 1 (the last attempt) and ok", d[0].Result.Status(), d[1].Result.Status())
		}
		if _, admitted, released := lim.counts(); admitted != 2 || released != 2 {
			t.Errorf("admitted %d, released %d; want 2 and 2", admitted, released)
		}
	})
}

// TestPoolStopFailsDelayedRetries: Stop does not wait for a retry's delay;
// the retry fails with its last attempt.
func TestPoolStopFailsDelayedRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{run: func(context.Context, *Job) *Result { return &Result{ExitCode: 3} }}
		rec := &recorder{}
		var p *Pool
		p = newPool(t, Options{Jobs: 1, Executor: ex, Retries: 2,
			RetryDelay: func(*Result) time.Duration { return time.Hour },
			OnEvent: func(e Event) {
				rec.on(e)
				if e.Kind == JobFinished {
					p.Stop()
				}
			}})
		start := time.Now()
		if err := p.Run(context.Background(), feed("a", "b")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Run took %v, want it to return at once", d)
		}
		if got, want := rec.kinds(), []string{"started 1/1", "finished 1/1", "done 1/1"}; !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

func TestPoolStopBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 2, Executor: ex, OnEvent: rec.on})
		p.Stop()
		if err := p.Run(context.Background(), feed("a", "b")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if n := len(ex.preparedSeqs()); n != 0 {
			t.Errorf("%d jobs prepared after Stop, want 0", n)
		}
		if ev := rec.kinds(); len(ev) != 0 {
			t.Errorf("events %q after Stop, want none", ev)
		}
	})
}

// TestPoolCancelKillsRunningJobs: cancelling Run's context kills the
// running jobs, fails the queued retries with their last attempt, reads
// no more items, and Run returns nil at once.
func TestPoolCancelKillsRunningJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := make(chan call)
		ex := &fakeExec{run: handOff(calls)}
		rec := &recorder{}
		ctx, cancel := context.WithCancel(context.Background())
		p := newPool(t, Options{Jobs: 2, Executor: ex, Retries: 1, OnEvent: rec.on,
			RetryDelay: func(*Result) time.Duration { return time.Hour }})
		wait := runBackground(ctx, p, feed(nItems(5)...))
		c1, c2 := nextCall(t, calls), nextCall(t, calls)
		if c1.job.Seq != 1 {
			c1, c2 = c2, c1
		}
		c1.exit(1) // its retry waits an hour; item 3 starts
		c3 := nextCall(t, calls)
		start := time.Now()
		cancel()
		if err := wait(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Run took %v after the cancellation, want it to return at once", d)
		}
		for _, c := range []call{c2, c3} {
			if c.ctx.Err() == nil {
				t.Errorf("job %d: context not cancelled", c.job.Seq)
			}
		}
		if got := ex.preparedSeqs(); !slices.Equal(got, []int64{1, 2, 3}) {
			t.Errorf("prepared jobs %v, want [1 2 3]", got)
		}
		status := map[int64]string{}
		for _, d := range rec.of(JobDone) {
			status[d.Job.Seq] = d.Result.Status()
		}
		want := map[int64]string{1: "exit status 1", 2: "killed by SIGKILL", 3: "killed by SIGKILL"}
		if fmt.Sprint(status) != fmt.Sprint(want) {
			t.Errorf("final results %v, want %v", status, want)
		}
	})
}

// TestPoolLimiterFailureStopsAdmissions: a limiter error stops admissions,
// lets the running job finish, and is what Run returns; a cancellation by
// Stop is not an error.
func TestPoolLimiterFailureStopsAdmissions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := make(chan call)
		ex := &fakeExec{run: handOff(calls)}
		lim := &fakeLimiter{gate: make(chan error)}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 2, Executor: ex, Limiter: lim, OnEvent: rec.on})
		wait := runBackground(context.Background(), p, feed(nItems(5)...))
		lim.grant(t, nil)
		c := nextCall(t, calls)
		lim.grant(t, throttle.ErrBackend)
		synctest.Wait()
		if c.ctx.Err() != nil {
			t.Error("the limiter's failure cancelled the running job, want it left to finish")
		}
		c.exit(0)
		err := wait()
		if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), "admit job 2") {
			t.Fatalf("Run = %v, want an error about job 2 wrapping %v", err, throttle.ErrBackend)
		}
		if n, _, _ := lim.counts(); n != 2 {
			t.Errorf("Admit called %d times, want 2", n)
		}
		if got := ex.preparedSeqs(); !slices.Equal(got, []int64{1, 2}) {
			t.Errorf("prepared jobs %v, want [1 2]", got)
		}
		if got, want := rec.kinds(), []string{"started 1/1", "finished 1/1", "done 1/1"}; !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

// TestPoolWithThrottleLimiter runs the pool on the real limiter: starts
// keep 2/s and 3/2s, at most 2 in flight, as fast as the rules allow.
func TestPoolWithThrottleLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rules := []throttle.Rule{{N: 2, Window: time.Second}, {N: 3, Window: 2 * time.Second}}
		lim, err := throttle.New(throttle.Options{Rules: rules, MaxInFlight: 2})
		if err != nil {
			t.Fatal(err)
		}
		const jobTime = 100 * time.Millisecond
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 2, Executor: &fakeExec{run: hold(jobTime)}, Limiter: lim, OnEvent: rec.on})
		if err := p.Run(context.Background(), feed(nItems(7)...)); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		var starts []time.Time
		for _, e := range rec.of(JobStarted) {
			starts = append(starts, e.Admission.At)
		}
		if len(starts) != 7 {
			t.Fatalf("%d starts, want 7", len(starts))
		}
		for _, r := range throttle.Check(rules, calls1(starts...)) {
			if r.Violations > 0 {
				t.Errorf("rule %v broken %d times; starts %v", r.Rule, r.Violations, starts)
			}
		}
		if got, want := starts[6].Sub(starts[0]), fastest(rules, 7, 2, jobTime); got != want {
			t.Errorf("makespan %v, want the fastest legal one, %v", got, want)
		}
		if s := lim.Stats(); s.InFlight != 0 || s.PeakInFlight > 2 {
			t.Errorf("limiter in flight %d, peak %d; want 0 and at most 2", s.InFlight, s.PeakInFlight)
		}
	})
}

// TestPoolReadsItemsOnlyAsNeeded: the pool takes an item only when it can
// start it, so memory stays bounded however fast items come.
func TestPoolReadsItemsOnlyAsNeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := make(chan call)
		p := newPool(t, Options{Jobs: 2, Executor: &fakeExec{run: handOff(calls)}})
		items, stopFeed := endless()
		wait := runBackground(context.Background(), p, items)
		c1, c2 := nextCall(t, calls), nextCall(t, calls)
		noCall(t, calls)
		p.Stop()
		c1.exit(0)
		c2.exit(0)
		if err := wait(); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if n := stopFeed(); n != 2 {
			t.Errorf("pool took %d items in all, want exactly the 2 it ran", n)
		}
	})
}

// TestPoolDroppedRetryIsMarked: an attempt whose retry is dropped during
// its backoff (Stop, a cancelled context; with KeepOrder or not) comes
// back as the item's JobDone with RetryDropped set, so that a consumer
// writing one record per attempt (a job-log row on each JobFinished with
// Retry, and on each other JobDone) writes exactly one per JobFinished.
func TestPoolDroppedRetryIsMarked(t *testing.T) {
	for _, tt := range []struct {
		name      string
		keepOrder bool
		cancel    bool
	}{
		{"stop", false, false},
		{"stop, keep order", true, false},
		{"cancel", false, true},
		{"cancel, keep order", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ex := &fakeExec{run: func(_ context.Context, j *Job) *Result {
					if j.Item == "ok" {
						return &Result{}
					}
					return &Result{ExitCode: 3}
				}}
				rec := &recorder{}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var p *Pool
				finished := 0
				p = newPool(t, Options{Jobs: 1, Executor: ex, Retries: 2, KeepOrder: tt.keepOrder,
					RetryDelay: func(*Result) time.Duration { return time.Hour },
					OnEvent: func(e Event) {
						rec.on(e)
						if e.Kind == JobFinished {
							if finished++; finished == 3 { // fail, ok, fail: two retries wait
								if tt.cancel {
									cancel()
								} else {
									p.Stop()
								}
							}
						}
					}})
				if err := p.Run(ctx, feed("a", "ok", "b", "c")); err != nil {
					t.Fatalf("Run = %v, want nil", err)
				}
				records := 0
				for _, e := range rec.list() {
					switch {
					case e.Kind == JobFinished && e.Retry:
						records++
					case e.Kind == JobDone && !e.RetryDropped:
						records++
					}
				}
				if n := len(rec.of(JobFinished)); records != n {
					t.Errorf("%d records for %d attempts (events %q), want one per attempt", records, n, rec.kinds())
				}
				for _, d := range rec.of(JobDone) {
					if want := d.Job.Item != "ok"; d.RetryDropped != want {
						t.Errorf("JobDone %d (%s): RetryDropped = %v, want %v", d.Job.Seq, d.Job.Item, d.RetryDropped, want)
					}
				}
				if got := rec.doneSeqs(); len(got) != 3 {
					t.Errorf("JobDone for %v, want three items", got)
				}
			})
		})
	}
}

// calls1 returns one call of cost 1 per instant.
func calls1(times ...time.Time) []throttle.Call {
	cs := make([]throttle.Call, len(times))
	for i, t := range times {
		cs[i] = throttle.Call{At: t, Cost: 1}
	}
	return cs
}

// fastest is the makespan of the fastest legal schedule of n calls of
// cost 1 (throttle.Plan).
func fastest(rules []throttle.Rule, n, jobs int, runtime time.Duration) time.Duration {
	costs := make([]int, n)
	for i := range costs {
		costs[i] = 1
	}
	t0 := time.Unix(0, 0)
	at := throttle.Plan(rules, nil, costs, t0, jobs, runtime)
	return at[len(at)-1].Sub(t0)
}

// heldLimiter holds its caller for hold after the backend recorded the
// call, as a busy machine does to a goroutine between the record and the
// pool's next look at its clock (45 ms was seen at load 10).
type heldLimiter struct {
	throttle.Backend
	hold time.Duration
}

func (l heldLimiter) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	a, err := l.Backend.Admit(ctx, cost)
	time.Sleep(l.hold)
	return a, err
}

// TestPoolLagCountsFromTheRecord: the time the caller was held after the
// in-memory limiter recorded its call (admitted at once, Latency 0) is
// part of the call's lag: the call left that much later than its record,
// and the margin must cover it.
func TestPoolLagCountsFromTheRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := throttle.New(throttle.Options{Rules: []throttle.Rule{{N: 100, Window: time.Second}}})
		if err != nil {
			t.Fatal(err)
		}
		defer lim.Close()
		ex := &fakeExec{run: func(ctx context.Context, job *Job) *Result {
			sleepCtx(ctx, 30*time.Millisecond)
			return &Result{Sent: time.Now()}
		}}
		rec := &recorder{}
		p := newPool(t, Options{Jobs: 1, Executor: ex, Limiter: heldLimiter{lim, 45 * time.Millisecond}, OnEvent: rec.on})
		if err := p.Run(context.Background(), feed("a")); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		done := rec.of(JobDone)
		if len(done) != 1 {
			t.Fatalf("%d JobDone events, want 1", len(done))
		}
		if r := done[0].Result; r.Lag != 75*time.Millisecond || r.Sent.Sub(r.Start) != 75*time.Millisecond {
			t.Errorf("lag %v, sent %v after the record; want 75ms: held 45ms after the record, sent 30ms later", r.Lag, r.Sent.Sub(r.Start))
		}
	})
}
