package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Limiter admits job starts. Acquire blocks until a job may start, and
// returns the function that tells the limiter it has ended. A
// *throttle.Limiter is one.
type Limiter interface {
	Acquire(ctx context.Context) (release func(), err error)
}

// Admitter is a Limiter that also reports the instant at which it
// admitted a call, as throttle's limiters do. The pool then stamps the
// result with that instant (Result.Start): a job log must show when the
// rules counted the call, and the pool's clock, read a moment later, could
// make two calls admitted exactly one window apart look closer than that.
type Admitter interface {
	Admit(ctx context.Context) (admitted time.Time, release func(), err error)
}

// Executor prepares and runs jobs.
type Executor interface {
	// Prepare fills in job.Argv before the job is admitted. An error means
	// the job cannot run at all (it fails without consuming quota and is
	// not retried). It is called from one goroutine at a time.
	Prepare(job *Job) error
	// Execute runs the job and returns how it ended. It must return soon
	// after ctx is done. Result.Job, Start and Runtime are filled in by
	// the pool.
	Execute(ctx context.Context, job *Job) *Result
}

// Clock tells the time. A throttle.Clock is one.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Options configure a Pool.
type Options struct {
	// Jobs caps the attempts in flight; it must be at least 1.
	Jobs int
	// Limiter admits every attempt, retries included; nil admits at once.
	Limiter Limiter
	// Executor prepares and runs jobs; required.
	Executor Executor
	// Retries is how many more times a failed item is tried. Each retry is
	// admitted by the limiter again: it is a real call.
	Retries int
	// KeepOrder delivers JobDone events in input order. To keep memory
	// bounded the pool then starts no item more than OrderWindow items
	// after the oldest one whose result is not delivered yet.
	KeepOrder bool
	// OrderWindow bounds how far ahead of the oldest undelivered item the
	// pool runs with KeepOrder; 0 means 4 × Jobs.
	OrderWindow int
	// Clock stamps admissions and measures runtimes; nil means the
	// system clock.
	Clock Clock
	// OnEvent receives every event, from one goroutine at a time, in the
	// order they happen. It should return quickly: admissions and other
	// events wait for it.
	OnEvent func(Event)
}

// Pool runs one job per item: it reads items as they arrive, starts each
// once a slot is free and the limiter admits it, holds the limiter's
// release until the job ends, retries failures, and reports everything
// through Options.OnEvent.
//
// Stop stops admissions and lets running jobs finish; cancelling the
// context given to Run also kills them (through the executor). Run returns
// once every goroutine it started has ended.
//
// Make a Pool with NewPool; Run may be called once. Stop is safe to call
// from any goroutine, any number of times.
type Pool struct {
	opts     Options
	stopOnce sync.Once
	stop     chan struct{}
}

// NewPool checks opts and returns a pool.
func NewPool(opts Options) (*Pool, error) {
	if opts.Jobs < 1 {
		return nil, fmt.Errorf("runner: jobs = %d, want at least 1", opts.Jobs)
	}
	if opts.Executor == nil {
		return nil, errors.New("runner: no executor")
	}
	if opts.Retries < 0 {
		return nil, fmt.Errorf("runner: retries = %d, want at least 0", opts.Retries)
	}
	if opts.OrderWindow <= 0 {
		opts.OrderWindow = 4 * opts.Jobs
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	if opts.OnEvent == nil {
		opts.OnEvent = func(Event) {}
	}
	return &Pool{opts: opts, stop: make(chan struct{})}, nil
}

// Stop makes the pool admit nothing more: running jobs finish, pending
// retries fail with their last result, and Run returns. It is idempotent.
func (p *Pool) Stop() { p.stopOnce.Do(func() { close(p.stop) }) }

// errStopped marks an admission that came after Stop.
var errStopped = errors.New("runner: stopped")

// admission is the admitter's answer for one job.
type admission struct {
	job     Job
	release func()
	err     error
	at      time.Time // when the admitter got the answer, by the pool's clock
	stamp   time.Time // when the limiter admitted the call (at if it does not say)
	waited  time.Duration
}

// retry is an item waiting for another attempt.
type retry struct {
	job  Job
	last *Result // the failed attempt, reported if no other comes
}

// Run reads items until items is closed, ctx is done or Stop is called,
// runs them, and returns once every job has ended and every event has been
// delivered. It returns an error only when the limiter fails; jobs that
// fail are reported through events.
func (p *Pool) Run(ctx context.Context, items <-chan Item) error {
	admitCtx, cancelAdmit := context.WithCancel(ctx)
	defer cancelAdmit()

	requests := make(chan Job)
	admissions := make(chan admission)
	results := make(chan *Result)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the admitter: one Acquire at a time, in order
		defer wg.Done()
		for job := range requests {
			t0 := p.opts.Clock.Now()
			var release func()
			var stamp time.Time
			var err error
			switch l := p.opts.Limiter.(type) {
			case nil:
			case Admitter:
				stamp, release, err = l.Admit(admitCtx)
			default:
				release, err = l.Acquire(admitCtx)
			}
			if release == nil {
				release = func() {}
			}
			at := p.opts.Clock.Now()
			if stamp.IsZero() {
				stamp = at
			}
			admissions <- admission{job: job, release: release, err: err, at: at, stamp: stamp, waited: at.Sub(t0)}
		}
	}()

	s := &state{
		pool:    p,
		slots:   make([]bool, p.opts.Jobs),
		next:    1,
		nextOut: 1,
		order:   make(map[int64]*Result),
	}
	stop := p.stop
	done := ctx.Done()
	for {
		if !s.stopping { // Stop or cancel may have come while busy
			select {
			case <-stop:
				stop, s.stopping = nil, true
				cancelAdmit()
			case <-done:
				done, s.stopping = nil, true
				cancelAdmit()
			default:
			}
		}
		if s.finished() {
			break
		}
		var in <-chan Item
		if s.canAdmit() {
			if len(s.retries) > 0 {
				r := s.retries[0]
				s.retries = s.retries[1:]
				s.request(requests, r.job, r.last)
				continue
			}
			if !s.inputDone && s.windowOpen() {
				in = items
			}
		}
		select {
		case it, ok := <-in:
			if !ok {
				s.inputDone = true
				continue
			}
			job := Job{Seq: s.next, Item: it.Text, Attempt: 1}
			s.next++
			if it.Skip {
				s.skip(job.Seq)
				continue
			}
			if it.Err != nil {
				s.final(&Result{Job: job, ExitCode: -1, Err: fmt.Errorf("job %d: %w", job.Seq, it.Err)})
				continue
			}
			s.request(requests, job, nil)
		case a := <-admissions:
			s.admitted(a, admitCtx, ctx, results, &wg)
		case r := <-results:
			s.ended(r)
		case <-stop:
			stop = nil
			s.stopping = true
			cancelAdmit()
		case <-done:
			done = nil
			s.stopping = true
			cancelAdmit()
		}
	}
	close(requests)
	wg.Wait()
	return s.err
}

// state is Run's bookkeeping, owned by Run's goroutine.
type state struct {
	pool      *Pool
	slots     []bool // slots[i]: slot i+1 is taken
	inFlight  int    // attempts admitted and not ended
	pending   bool   // a job is with the admitter
	pendLast  *Result
	retries   []retry
	next      int64 // Seq of the next item
	nextOut   int64 // Seq of the next JobDone with KeepOrder
	order     map[int64]*Result
	inputDone bool
	stopping  bool
	err       error // the limiter's failure
}

// finished reports whether Run may return.
func (s *state) finished() bool {
	if s.pending || s.inFlight > 0 {
		return false
	}
	if s.stopping {
		s.failRetries()
		return true
	}
	return s.inputDone && len(s.retries) == 0
}

// canAdmit reports whether another job may go to the admitter.
func (s *state) canAdmit() bool {
	return !s.stopping && !s.pending && s.freeSlots() > 0
}

// freeSlots is the number of untaken slots; the pending job holds one.
func (s *state) freeSlots() int {
	n := len(s.slots) - s.inFlight
	if s.pending {
		n--
	}
	return n
}

// windowOpen reports whether a new item may start under KeepOrder.
func (s *state) windowOpen() bool {
	return !s.pool.opts.KeepOrder || s.next < s.nextOut+int64(s.pool.opts.OrderWindow)
}

// takeSlot returns the lowest free slot number and marks it taken.
func (s *state) takeSlot() int {
	for i, taken := range s.slots {
		if !taken {
			s.slots[i] = true
			return i + 1
		}
	}
	panic("runner: no free slot") // canAdmit guarantees one
}

// request prepares job and hands it to the admitter, or fails it if it
// cannot be prepared. last is the item's previous attempt, if any.
func (s *state) request(requests chan<- Job, job Job, last *Result) {
	job.Slot = s.takeSlot()
	if err := s.pool.opts.Executor.Prepare(&job); err != nil {
		s.slots[job.Slot-1] = false
		if last != nil {
			last.Close()
		}
		s.final(&Result{Job: job, ExitCode: -1, Err: err})
		return
	}
	s.pending, s.pendLast = true, last
	requests <- job
}

// admitted starts the job the admitter let through, or drops it.
func (s *state) admitted(a admission, admitCtx, ctx context.Context, results chan<- *Result, wg *sync.WaitGroup) {
	s.pending = false
	last := s.pendLast
	s.pendLast = nil
	if a.err == nil && s.stopping {
		a.err = errStopped // admitted just as the pool stopped: too late
	}
	if a.err != nil {
		a.release()
		s.slots[a.job.Slot-1] = false
		if admitCtx.Err() == nil && a.err != errStopped {
			s.err = fmt.Errorf("runner: admit job %d: %w", a.job.Seq, a.err)
			s.stopping = true
		}
		if last != nil {
			s.final(last) // a retry that never ran: the last attempt stands
		} else {
			s.skip(a.job.Seq)
		}
		return
	}
	if last != nil {
		last.Close()
	}
	s.inFlight++
	s.pool.opts.OnEvent(Event{Kind: JobStarted, Job: a.job, Admitted: a.stamp, Waited: a.waited, InFlight: s.inFlight})
	wg.Add(1)
	go func(job Job) {
		defer wg.Done()
		res := s.pool.opts.Executor.Execute(ctx, &job)
		end := s.pool.opts.Clock.Now()
		a.release()
		res.Job, res.Start, res.Waited, res.Runtime = job, a.stamp, a.waited, end.Sub(a.at)
		results <- res
	}(a.job)
}

// ended handles an attempt's result.
func (s *state) ended(r *Result) {
	s.inFlight--
	s.slots[r.Job.Slot-1] = false
	again := !r.OK() && r.Job.Attempt <= s.pool.opts.Retries && !s.stopping &&
		!errors.Is(r.Err, ErrPermanent)
	s.pool.opts.OnEvent(Event{Kind: JobFinished, Job: r.Job, Result: r, Retry: again, InFlight: s.inFlight})
	if again {
		job := r.Job
		job.Attempt++
		job.Argv = nil
		s.retries = append(s.retries, retry{job: job, last: r})
		return
	}
	s.final(r)
}

// final delivers an item's final result, in order with KeepOrder.
func (s *state) final(r *Result) {
	if !s.pool.opts.KeepOrder {
		s.deliver(r)
		return
	}
	s.order[r.Job.Seq] = r
	s.flush()
}

// skip records that item seq will have no result (it was never started).
func (s *state) skip(seq int64) {
	if s.pool.opts.KeepOrder {
		s.order[seq] = nil
		s.flush()
	}
}

// flush delivers the results that are next in order.
func (s *state) flush() {
	for {
		r, ok := s.order[s.nextOut]
		if !ok {
			return
		}
		delete(s.order, s.nextOut)
		s.nextOut++
		if r != nil {
			s.deliver(r)
		}
	}
}

// deliver reports r as final and drops its output.
func (s *state) deliver(r *Result) {
	s.pool.opts.OnEvent(Event{Kind: JobDone, Job: r.Job, Result: r, InFlight: s.inFlight})
	r.Close()
}

// failRetries makes the last attempt of every queued retry final.
func (s *state) failRetries() {
	for _, r := range s.retries {
		s.final(r.last)
	}
	s.retries = nil
}
