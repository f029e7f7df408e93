// Package limiter opens the throttle.Backend a run's flags ask for: the
// in-memory limiter, the Redis-backed one (--redis), or the local store
// (--key alone). It turns a refusal for other rules into a message that
// says what to agree on, names the backend in its errors mid-run, and
// reports Redis's outages as they start and end. pace run, fetch, proxy
// and exec open their backend with it.
package limiter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Shared names the quota a process shares with others, as the checked
// flags give it: a Redis (URL), or the local store of this host (Local).
// The zero value shares nothing.
type Shared struct {
	// URL is the Redis; empty means none.
	URL string
	// Key names the quota (--key).
	Key string
	// Local keeps the quota in the local store in State (--key without
	// a Redis); an empty State means localstore.DefaultDir().
	Local bool
	State string
	// GlobalJobs caps the jobs in flight across every process sharing
	// the key; 0 means no cap.
	GlobalJobs int
	// Timeout is how long a Redis that does not answer is retried.
	Timeout time.Duration
}

// Options are what opening a backend needs: the run's rules, margin and
// reordering, where the quota is shared, and whether to say where.
type Options struct {
	Rules  []throttle.Rule
	Margin time.Duration
	// FixedMargin says the margin never changes (pace exec): a shared
	// quota keeps it in one entry for every process with that margin
	// (redisrate.Options.FixedMargin, localstore.Options.FixedMargin).
	FixedMargin bool
	// CheckLater leaves the check of a Redis quota's rules to the first
	// admission, which refuses a quota kept with other rules with the same
	// message (redisrate.Options.CheckLater): a round trip less for a
	// process that admits at once (pace exec). Not with a fleet-wide cap
	// on jobs (GlobalJobs), whose slot is taken before the admission.
	CheckLater bool
	Reorder    bool
	Shared     Shared
	// Verbose says on the writer which quota is opened.
	Verbose bool
}

// Open makes the limiter o asks for: the in-memory limiter, the
// Redis-backed one with a URL, or the local store (openLocal). Messages
// about the backend (Redis outages) go to w. A shared backend checks its
// rules against the ones stored before it returns, which may take up to
// o.Shared.Timeout while Redis does not answer; ctx cuts that short.
func Open(ctx context.Context, o Options, w io.Writer) (throttle.Backend, error) {
	sh := o.Shared
	if sh.Local {
		return openLocal(ctx, o, w)
	}
	if sh.URL == "" {
		return throttle.New(throttle.Options{Rules: o.Rules, Margin: o.Margin, Reorder: o.Reorder})
	}
	// go-redis logs some failures on stderr by itself, outside pace's
	// control of what is printed; pace reports Redis trouble itself. The
	// logger is go-redis's process-wide setting, and only main gets here.
	redis.SetLogger(QuietRedisLogger{})
	url := redisrate.RedactURL(sh.URL)
	out := &outageWriter{w: w, url: url, timeout: sh.Timeout}
	if o.Verbose {
		fmt.Fprintf(w, "pace: redis: quota %q at %s\n", sh.Key, url)
	}
	b, err := redisrate.Dial(ctx, sh.URL, redisrate.Options{
		Key:         sh.Key,
		Rules:       o.Rules,
		Margin:      o.Margin,
		FixedMargin: o.FixedMargin,
		// A slot is taken before the admission, and the slots script
		// does not check the rules: a process of other rules would hold
		// one of another fleet's slots until its admission is refused.
		CheckLater: o.CheckLater && sh.GlobalJobs == 0,
		GlobalJobs: sh.GlobalJobs,
		Timeout:    sh.Timeout,
		OnOutage:   out.report,
		OnLoss:     out.lost(sh.Key),
		OnClientClock: func() {
			out.mu.Lock()
			defer out.mu.Unlock()
			fmt.Fprintf(w, "pace: redis %s refuses TIME in scripts: quota %q is kept on each process's own clock, "+
				"so the machines sharing it must keep their clocks in sync (one whose clock runs ahead lets the fleet over a rule); "+
				"allow TIME to keep it on Redis's clock (docs/redis.md)\n", url, sh.Key)
		},
	})
	told := func(m *throttle.MismatchError) error {
		return &mismatchError{m, fmt.Sprintf("redis quota %q at %s is kept with rules %q, this process has %q: "+
			"give every process sharing --key the same -r and --global-jobs, use another --key, "+
			"or wait until the quota has been unused for its longest window",
			m.Key, url, m.Stored, m.Spec)}
	}
	if err != nil {
		return nil, openError(err, told, func(err error) error { return fmt.Errorf("redis %s: %w", url, err) })
	}
	return namedBackend{Backend: b, name: "redis " + url, mismatch: told}, nil
}

// openLocal opens the local store of the key in its directory (or
// localstore.DefaultDir), named for messages "local quota NAME at PATH".
// A store kept with other rules is refused with a *throttle.MismatchError (exit 2);
// a damaged store, or one a newer pace wrote, with ErrBackend (exit 3),
// its file left as it is.
func openLocal(ctx context.Context, o Options, w io.Writer) (throttle.Backend, error) {
	sh := o.Shared
	dir := sh.State
	if dir == "" {
		var err error
		if dir, err = localstore.DefaultDir(); err != nil {
			return nil, err
		}
	}
	key := sh.Key
	if o.Verbose {
		fmt.Fprintf(w, "pace: local quota %q in %s\n", key, dir)
	}
	st, err := localstore.Open(ctx, localstore.Options{
		Dir:         dir,
		Key:         key,
		Rules:       o.Rules,
		Margin:      o.Margin,
		FixedMargin: o.FixedMargin,
		GlobalJobs:  sh.GlobalJobs,
	})
	told := func(m *throttle.MismatchError) error {
		return &mismatchError{m, fmt.Sprintf("local quota %q in %s is kept with rules %q, this process has %q: "+
			"give every process sharing --key the same -r and --global-jobs, use another --key, "+
			"wait until the quota has been unused for its longest window, or forget it with pace quota reset --key %s%s",
			m.Key, dir, m.Stored, m.Spec, key, stateFlag(sh.State))}
	}
	if err != nil {
		// The store's errors name its file and say what to do.
		return nil, openError(err, told, func(err error) error { return err })
	}
	return namedBackend{Backend: st, name: fmt.Sprintf("local quota %s at %s", key, st.Path()), mismatch: told}, nil
}

// openError returns what Open says of a backend that failed to open with
// err: a quota kept with other rules as told says, anything else as other
// does.
func openError(err error, told func(*throttle.MismatchError) error, other func(error) error) error {
	if mismatch, ok := errors.AsType[*throttle.MismatchError](err); ok {
		return told(mismatch)
	}
	return other(err)
}

// mismatchError is a *throttle.MismatchError told to pace's user: what
// to agree on, in flags.
type mismatchError struct {
	err *throttle.MismatchError
	msg string
}

func (e *mismatchError) Error() string { return e.msg }
func (e *mismatchError) Unwrap() error { return e.err }

// stateFlag returns " --state DIR" when state names a directory, for
// commands pace suggests.
func stateFlag(state string) string {
	if state == "" {
		return ""
	}
	return " --state " + runner.Quote(state)
}

// namedBackend puts the backend's name (a redacted Redis URL, or the local
// quota's name and file) in front of its admission errors, so that a
// failure in the middle of a run says where, as one at the start does,
// and tells a quota kept with other rules (a process that claimed it
// meanwhile, or a check left to the first admission) as Open does.
type namedBackend struct {
	throttle.Backend
	name     string
	mismatch func(*throttle.MismatchError) error
}

// Inherited returns the files a command started for the call of a, an
// admission of b, inherits: the file of its --global-jobs slot where that
// slot is a lock on an open file (the local store; backend.Inheritable),
// so that the slot stays held for as long as the command, or anything it
// started, runs, even if pace is killed. None elsewhere.
func Inherited(b throttle.Backend, a throttle.Admission) []*os.File {
	if i, ok := b.(backend.Inheritable); ok {
		if f := i.SlotFile(a); f != nil {
			return []*os.File{f}
		}
	}
	return nil
}

// SlotFile is the store's (backend.Inheritable), nil where slots are not
// files.
func (b namedBackend) SlotFile(a throttle.Admission) *os.File {
	if i, ok := b.Backend.(backend.Inheritable); ok {
		return i.SlotFile(a)
	}
	return nil
}

func (b namedBackend) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	a, err := b.Backend.Admit(ctx, cost)
	var mismatch *throttle.MismatchError
	switch {
	case err == nil:
	case errors.As(err, &mismatch) && b.mismatch != nil:
		err = b.mismatch(mismatch)
	case errors.Is(err, throttle.ErrBackend):
		err = fmt.Errorf("%s: %w", b.name, err)
	}
	return a, err
}

// outageWriter says on w when Redis stops answering, or refuses with an
// error a retry may cure (pace admits nothing meanwhile), and when it
// answers again.
type outageWriter struct {
	w       io.Writer
	url     string // redacted
	timeout time.Duration

	mu sync.Mutex
}

func (o *outageWriter) report(e redisrate.Outage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case e.Down && e.Refused:
		fmt.Fprintf(o.w, "pace: redis %s refuses to record admissions (%s); starting no job until it does, for up to %s\n",
			o.url, redisrate.RedactURL(e.Err.Error()), o.timeout)
	case e.Refused:
		fmt.Fprintf(o.w, "pace: redis %s records admissions again after %s; going on\n", o.url, human.Duration(time.Since(e.Since)))
	case e.Down && e.Err != nil:
		fmt.Fprintf(o.w, "pace: redis %s is not answering (%s); starting no job until it does, for up to %s\n",
			o.url, redisrate.RedactURL(e.Err.Error()), o.timeout)
	case e.Down:
		fmt.Fprintf(o.w, "pace: redis %s is not answering (no reply for %s); starting no job until it does, for up to %s\n",
			o.url, human.Duration(time.Since(e.Since)), o.timeout)
	default:
		fmt.Fprintf(o.w, "pace: redis %s is answering again after %s; going on\n", o.url, human.Duration(time.Since(e.Since)))
	}
}

// lost returns what says on w that Redis lost the quota key in use
// (redisrate.Options.OnLoss): this process recorded its calls again, but
// the rules may be broken until the calls of other processes that it
// forgot would have left the longest window.
func (o *outageWriter) lost(key string) func(redisrate.Loss) {
	return func(e redisrate.Loss) {
		o.mu.Lock()
		defer o.mu.Unlock()
		fmt.Fprintf(o.w, "pace: redis %s lost quota %q, which held a call of this process %s before "+
			"(Redis restarted without persistence, was flushed, evicted keys or failed over): "+
			"recorded again %d %s of this process that it still counts; "+
			"the calls of processes that have exited or admitted nothing since are forgotten, "+
			"and the fleet may go over a rule for the next %s\n",
			o.url, key, human.Duration(e.At.Sub(e.Last)), e.Restored, human.Plural(e.Restored, "call"),
			short(human.Duration(e.Last.Add(e.Window).Sub(e.At))))
	}
}

// short writes d without a trailing "0s" after minutes ("1m", not "1m0s").
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		return strings.TrimSuffix(s, "0s")
	}
	return s
}

// QuietRedisLogger discards go-redis's own log lines (redis.SetLogger):
// pace reports Redis's trouble itself.
type QuietRedisLogger struct{}

// Printf discards a line.
func (QuietRedisLogger) Printf(context.Context, string, ...any) {}
