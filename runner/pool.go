package runner

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
)

// Limiter admits job starts: Admit blocks until a call of the given cost
// may start, and the Admission it returns is released once the job has
// ended. Every throttle.Backend is one.
type Limiter interface {
	Admit(ctx context.Context, cost int) (throttle.Admission, error)
}

// Executor prepares and runs jobs.
type Executor interface {
	// Prepare fills in job.Argv (and job.Cost, for cost rules; and
	// job.Prepared, what Execute may reuse) before the job is admitted. An error means the job cannot run at all: it fails
	// without consuming quota and is not retried. It is called from one
	// goroutine at a time.
	Prepare(job *Job) error
	// Execute runs the job and returns how it ended. It must return soon
	// after ctx is done. Result.Job, Start, Waited and Runtime are filled
	// in by the pool.
	Execute(ctx context.Context, job *Job) *Result
}

// Skipper is an Executor that is told of the jobs the pool skips (done by
// an earlier run, on --resume), from the goroutine that calls Prepare:
// pace fetch keeps their output files from being written again.
type Skipper interface {
	Skipped(job *Job)
}

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
	// RetryDelay, if set, returns how long after a failed attempt its
	// retry may be admitted (a connection refused is worth a pause; a 429
	// has paused the limiter already). nil retries at once.
	RetryDelay func(r *Result) time.Duration
	// KeepOrder delivers JobDone events in input order. To keep memory
	// bounded the pool then starts no item more than OrderWindow items
	// after the oldest one whose result is not delivered yet.
	KeepOrder bool
	// OrderWindow bounds how far ahead of the oldest undelivered item the
	// pool runs with KeepOrder; 0 means 4 × Jobs.
	OrderWindow int
	// Reorder lets calls overtake one another at admission: instead of
	// one Admit at a time, in input order, the pool asks the limiter to
	// admit as many jobs as it has free slots, at once, and starts each
	// as it is admitted. With a limiter that admits whatever fits first
	// (throttle.Options.Reorder), cheap calls then go while a costly one
	// waits for room.
	Reorder bool
	// OnEvent receives every event, from one goroutine at a time, in the
	// order they happen. It should return quickly: admissions and other
	// events wait for it.
	OnEvent func(Event)
}

// notStartedRetries bounds how often an attempt that could not start for
// lack of resources is tried again before it fails; notStartedBackoff is
// the first pause before such a retry, doubling up to a second.
const (
	notStartedRetries = 20
	notStartedBackoff = 50 * time.Millisecond
)

// Pool runs one job per item: it reads items as they arrive, starts each
// once a slot is free and the limiter admits it, holds the admission until
// the job ends, retries failures, and reports everything through
// Options.OnEvent.
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
	job    Job
	a      throttle.Admission
	err    error
	at     time.Time // when the admitter got the answer
	queued bool      // the backend said it held its place (entered was sent)
}

// retry is an attempt waiting to be admitted again.
type retry struct {
	job       Job
	last      *Result   // the failed attempt, reported if no other comes; nil for a job not started
	notBefore time.Time // no admission before
	starts    int       // times it could not start for lack of resources
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
	entered := make(chan struct{}, 1) // one per request: it holds its place, or returned
	results := make(chan *Result)
	var wg sync.WaitGroup
	admit := func(ctx context.Context, job Job, queued *bool) {
		var ad admission
		ad.job = job
		if p.opts.Limiter != nil {
			ad.a, ad.err = p.opts.Limiter.Admit(ctx, max(job.Cost, 1))
		} else {
			ad.a = throttle.Admission{At: time.Now(), Cost: max(job.Cost, 1)} // holds nothing
		}
		ad.at = time.Now()
		ad.queued = *queued
		admissions <- ad
	}
	admitApart := func(job Job) { wg.Go(func() { admit(admitCtx, job, new(bool)) }) } // job escapes here only
	// The admitter: one Admit at a time, in order, unless Reorder. A
	// backend that queues its callers says when this one holds its place
	// (backend.WithQueued): the next job may then ask behind it, and the
	// loop goes on in a new goroutine while this one waits. Otherwise the
	// next asks once this Admit returns.
	var admitter func()
	admitter = func() {
		for job := range requests {
			if p.opts.Reorder {
				admitApart(job)
				continue
			}
			queued := false
			ctx := admitCtx
			if p.opts.Limiter != nil {
				ctx = backend.WithQueued(admitCtx, func() {
					if !queued {
						queued = true
						entered <- struct{}{}
						wg.Go(admitter)
					}
				})
			}
			admit(ctx, job, &queued)
			if queued {
				return
			}
		}
	}
	wg.Go(admitter)

	s := &state{
		pool:    p,
		ctx:     ctx,
		results: results,
		work:    make(chan admission),
		wg:      &wg,
		next:    1,
		nextOut: 1,
		order:   make(map[int64]orderedResult),
		starts:  make(map[int64]int),
		pending: make(map[int64]retry),
	}
	stop := p.stop
	done := ctx.Done()
	var timer *time.Timer
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
		var wake <-chan time.Time
		if s.canAdmit() {
			if r, ok := s.dueRetry(); ok {
				s.request(requests, r)
				continue
			}
			if t, ok := s.nextRetry(); ok {
				if timer == nil {
					timer = time.NewTimer(time.Until(t))
				} else {
					timer.Reset(time.Until(t))
				}
				wake = timer.C
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
			job := Job{Seq: s.next, Item: it.Text, Cols: it.Cols, Attempt: 1}
			s.next++
			if it.Skip {
				if sk, ok := s.pool.opts.Executor.(Skipper); ok {
					sk.Skipped(&job)
				}
				s.skip(job.Seq)
				continue
			}
			if it.Err != nil {
				s.final(&Result{Job: job, ExitCode: -1, Err: fmt.Errorf("job %d: %w", job.Seq, it.Err)})
				continue
			}
			s.request(requests, retry{job: job})
		case <-wake:
		case <-entered:
			s.entering--
		case a := <-admissions:
			if !a.queued && !s.pool.opts.Reorder {
				s.entering--
			}
			s.admitted(a, admitCtx)
			if s.stopping {
				cancelAdmit() // the limiter failed: the admissions waiting end too
			}
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
	if timer != nil {
		timer.Stop()
	}
	close(requests)
	close(s.work)
	wg.Wait()
	return s.err
}

// state is Run's bookkeeping, owned by Run's goroutine.
type state struct {
	pool      *Pool
	ctx       context.Context // Run's: the jobs run under it
	results   chan<- *Result
	work      chan admission // to the workers waiting for a job
	workers   int            // started, at most Options.Jobs
	wg        *sync.WaitGroup
	free      slotHeap        // slots given back, lowest first
	nextSlot  int             // slots 1..nextSlot-1 have been handed out before
	inFlight  int             // attempts admitted and not ended
	pending   map[int64]retry // jobs with the admitter, by Seq
	entering  int             // jobs given to the admitter not yet holding their place (without Reorder)
	retries   []retry
	next      int64 // Seq of the next item
	nextOut   int64 // Seq of the next JobDone with KeepOrder
	order     map[int64]orderedResult
	starts    map[int64]int // per item in flight: times it could not start before
	inputDone bool
	stopping  bool
	err       error // the limiter's failure
	errSeq    int64 // the job whose admission failed so
}

// finished reports whether Run may return.
func (s *state) finished() bool {
	if len(s.pending) > 0 || s.inFlight > 0 {
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
	return !s.stopping && (s.entering == 0 || s.pool.opts.Reorder) && s.inFlight+len(s.pending) < s.pool.opts.Jobs
}

// windowOpen reports whether a new item may start under KeepOrder.
func (s *state) windowOpen() bool {
	return !s.pool.opts.KeepOrder || s.next < s.nextOut+int64(s.pool.opts.OrderWindow)
}

// dueRetry takes the first retry whose time has come, if any.
func (s *state) dueRetry() (retry, bool) {
	now := time.Now()
	for i, r := range s.retries {
		if !r.notBefore.After(now) {
			s.retries = append(s.retries[:i], s.retries[i+1:]...)
			return r, true
		}
	}
	return retry{}, false
}

// nextRetry returns when the earliest retry is due, if there is one.
func (s *state) nextRetry() (time.Time, bool) {
	var t time.Time
	for _, r := range s.retries {
		if t.IsZero() || r.notBefore.Before(t) {
			t = r.notBefore
		}
	}
	return t, !t.IsZero()
}

// takeSlot returns the lowest free slot number.
func (s *state) takeSlot() int {
	if s.free.Len() > 0 {
		return heap.Pop(&s.free).(int)
	}
	s.nextSlot++
	return s.nextSlot
}

// giveSlot returns slot to the free ones.
func (s *state) giveSlot(slot int) { heap.Push(&s.free, slot) }

// request prepares r's job and hands it to the admitter, or fails it if it
// cannot be prepared.
func (s *state) request(requests chan<- Job, r retry) {
	job := r.job
	job.Slot = s.takeSlot()
	if err := s.pool.opts.Executor.Prepare(&job); err != nil {
		s.giveSlot(job.Slot)
		if r.last != nil {
			r.last.Close()
		}
		s.final(&Result{Job: job, ExitCode: -1, Err: err})
		return
	}
	s.pending[job.Seq] = r
	if !s.pool.opts.Reorder {
		s.entering++
	}
	requests <- job
}

// admitted starts the job the admitter let through, or drops it.
func (s *state) admitted(a admission, admitCtx context.Context) {
	r := s.pending[a.job.Seq]
	delete(s.pending, a.job.Seq)
	if a.err == nil && s.stopping {
		a.a.Release()
		a.err = errStopped // admitted just as the pool stopped: too late
	}
	if a.err != nil {
		s.giveSlot(a.job.Slot)
		// The limiter failed: stop, and report the failure of the
		// earliest job (several admissions may fail together, and come
		// back in any order), not the cancellations that follow it.
		failed := a.err != errStopped &&
			(admitCtx.Err() == nil || s.err != nil && !errors.Is(a.err, context.Canceled))
		if failed && (s.err == nil || a.job.Seq < s.errSeq) {
			s.err, s.errSeq = fmt.Errorf("admit job %d: %w", a.job.Seq, a.err), a.job.Seq
		}
		if failed {
			s.stopping = true
		}
		if r.last != nil {
			s.dropped(r.last) // a retry that never ran: the last attempt stands
		} else {
			s.skip(a.job.Seq)
		}
		return
	}
	if r.last != nil {
		r.last.Close()
	}
	s.inFlight++
	s.pool.opts.OnEvent(Event{Kind: JobStarted, Job: a.job, Admission: a.a, InFlight: s.inFlight})
	s.starts[a.job.Seq] = r.starts
	s.start(a)
}

// start hands a to a worker waiting for a job, or starts one. Workers
// stay for the next job, their stacks grown (an HTTP request needs a
// deep one): at most Options.Jobs of them. With that many, one is free or
// about to be, since fewer than Jobs results are not yet received, so
// the hand-over cannot wait on Run itself.
func (s *state) start(a admission) {
	if s.workers < s.pool.opts.Jobs {
		select {
		case s.work <- a:
			return
		default:
		}
		s.workers++
		s.worker(a)
		return
	}
	s.work <- a
}

// worker starts a worker with a as its first job (apart from start, so
// that a escapes to the heap only here).
func (s *state) worker(a admission) {
	s.wg.Go(func() {
		s.execute(a)
		for a := range s.work {
			s.execute(a)
		}
	})
}

// execute runs an admitted job, releases its admission and sends its
// result to Run. It runs on a worker.
func (s *state) execute(a admission) {
	job := a.job
	job.Admission = a.a
	res := s.pool.opts.Executor.Execute(s.ctx, &job)
	end := time.Now()
	job.Prepared = nil
	adm := job.Admission // the pool's to correct and release
	if res.Cost > 0 && res.Cost != adm.Cost {
		// The call said what it really cost; a correction that fails
		// leaves the estimate, which the rules then keep. It waits for a
		// store that does not answer as admissions do, until the jobs
		// are killed (s.ctx).
		_ = adm.Correct(s.ctx, res.Cost)
	}
	adm.Release()
	res.Job, res.Start, res.Waited, res.Runtime = job, adm.At, adm.Waited, end.Sub(a.at)
	if !res.Sent.IsZero() {
		res.Lag = adm.Lag(a.at, res.Sent)
	}
	s.results <- res
}

// ended handles an attempt's result.
func (s *state) ended(r *Result) {
	s.inFlight--
	s.giveSlot(r.Job.Slot)
	starts := s.starts[r.Job.Seq]
	delete(s.starts, r.Job.Seq)
	if errors.Is(r.Err, ErrNotStarted) && !s.stopping && starts < notStartedRetries {
		s.pool.opts.OnEvent(Event{Kind: JobNotStarted, Job: r.Job, Result: r, InFlight: s.inFlight})
		job := r.Job
		job.Argv, job.Admission, job.Prepared = nil, throttle.Admission{}, nil
		d := min(notStartedBackoff<<starts, time.Second)
		r.Close()
		s.retries = append(s.retries, retry{job: job, notBefore: time.Now().Add(d), starts: starts + 1})
		return
	}
	again := !r.OK() && r.Job.Attempt <= s.pool.opts.Retries && !s.stopping &&
		!errors.Is(r.Err, ErrPermanent)
	s.pool.opts.OnEvent(Event{Kind: JobFinished, Job: r.Job, Result: r, Retry: again, InFlight: s.inFlight})
	if again {
		job := r.Job
		job.Attempt++
		job.Argv, job.Admission, job.Prepared = nil, throttle.Admission{}, nil
		var notBefore time.Time
		if f := s.pool.opts.RetryDelay; f != nil {
			if d := f(r); d > 0 {
				notBefore = time.Now().Add(d)
			}
		}
		s.retries = append(s.retries, retry{job: job, last: r, notBefore: notBefore})
		return
	}
	s.final(r)
}

// final delivers an item's final result, in order with KeepOrder.
func (s *state) final(r *Result) { s.finalEvent(r, false) }

// dropped delivers r, an attempt already reported by a JobFinished that
// announced a retry, as final: the retry will not come.
func (s *state) dropped(r *Result) { s.finalEvent(r, true) }

// finalEvent delivers r's JobDone, in order with KeepOrder; dropped says
// whether r's retry was dropped (Event.RetryDropped).
func (s *state) finalEvent(r *Result, dropped bool) {
	if !s.pool.opts.KeepOrder {
		s.deliver(r, dropped)
		return
	}
	s.order[r.Job.Seq] = orderedResult{r, dropped}
	s.flush()
}

// skip records that item seq will have no result (it was never started).
func (s *state) skip(seq int64) {
	if s.pool.opts.KeepOrder {
		s.order[seq] = orderedResult{}
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
		if r.res != nil {
			s.deliver(r.res, r.dropped)
		}
	}
}

// deliver reports r as final and drops its output.
func (s *state) deliver(r *Result, dropped bool) {
	s.pool.opts.OnEvent(Event{Kind: JobDone, Job: r.Job, Result: r, RetryDropped: dropped, InFlight: s.inFlight})
	r.Close()
}

// orderedResult is an item's final result waiting for its turn with
// KeepOrder: nil res for an item that was never started.
type orderedResult struct {
	res     *Result
	dropped bool // its retry was dropped (Event.RetryDropped)
}

// failRetries makes the last attempt of every queued retry final; a job
// that never started has none and is skipped.
func (s *state) failRetries() {
	for _, r := range s.retries {
		if r.last != nil {
			s.dropped(r.last)
		} else {
			s.skip(r.job.Seq)
		}
	}
	s.retries = nil
}

// slotHeap is a min-heap of free slot numbers.
type slotHeap []int

func (h slotHeap) Len() int           { return len(h) }
func (h slotHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h slotHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slotHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *slotHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
