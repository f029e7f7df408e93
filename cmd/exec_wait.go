package cmd

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// waitNoteAfter is how long pace exec's admission waits, on a terminal,
// before pace says what it waits on (with -v it says so at once).
const waitNoteAfter = time.Second

// waitNote says on w what the admission of a call to the shared quota o
// waits on and until when: at once (before the admission) with verbose,
// else once it has waited waitNoteAfter when tty (stderr is a terminal),
// else never. It returns the function to call once the admission has
// returned; nothing is printed after it. A quota of one process (no
// --key) never makes its one call wait, and is not looked at.
func waitNote(ctx context.Context, o RedisOptions, w io.Writer, verbose, tty bool) (stop func()) {
	if o.URL == "" && !o.Local() {
		return func() {}
	}
	if verbose {
		if s := describeWait(ctx, o); s != "" {
			fmt.Fprintln(w, "pace: "+s)
		}
		return func() {}
	}
	if !tty {
		return func() {}
	}
	var mu sync.Mutex
	done := false
	ictx, cancel := context.WithCancel(ctx)
	t := time.AfterFunc(waitNoteAfter, func() {
		s := describeWait(ictx, o)
		mu.Lock()
		defer mu.Unlock()
		if s != "" && !done {
			fmt.Fprintln(w, "pace: "+s)
		}
	})
	return func() {
		t.Stop()
		cancel()
		mu.Lock()
		done = true
		mu.Unlock()
	}
}

// describeWait looks at the quota o, without changing it, and says what a
// call would wait on and until when, or "" when it would go at once or
// the quota cannot be read (the admission reports that).
func describeWait(ctx context.Context, o RedisOptions) string {
	if o.URL != "" {
		ro, err := redisrate.ParseURL(o.URL)
		if err != nil {
			return ""
		}
		c := redis.NewUniversalClient(ro)
		defer c.Close()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		key := o.Key
		if key == "" {
			key = redisrate.DefaultKey
		}
		q, err := redisrate.Inspect(ctx, c, key)
		if err != nil {
			return ""
		}
		where := fmt.Sprintf("quota %q (redis %s)", q.Key, redisrate.RedactURL(o.URL))
		return waitText(where, q.Rules, q.Now, q.Next, q.GlobalJobs, len(q.Leases))
	}
	dir := o.State
	if dir == "" {
		var err error
		if dir, err = localstore.DefaultDir(); err != nil {
			return ""
		}
	}
	q, err := localstore.Inspect(dir, o.Key)
	if err != nil {
		return ""
	}
	held := 0
	for _, s := range q.Slots {
		if s.Alive {
			held++
		}
	}
	where := fmt.Sprintf("quota %q (local %s)", q.Key, q.Path)
	return waitText(where, q.Rules, q.Now, q.Next, q.GlobalJobs, held)
}

// waitText says what a call to the quota named by where waits on: every
// fleet-wide slot held, or the fullest rule and when the next call may go.
func waitText(where string, rules []throttle.RuleStats, now, next time.Time, globalJobs, held int) string {
	if globalJobs > 0 && held >= globalJobs {
		return fmt.Sprintf("waiting for %s: all %d slots of --global-jobs are held; the call goes when one comes back", where, globalJobs)
	}
	d := next.Sub(now)
	if d <= 0 {
		return ""
	}
	full := ""
	for _, r := range rules {
		if r.Usage >= 1 {
			full = fmt.Sprintf("%s is full (%d/%d used); ", r.Rule, r.Used, r.Rule.N)
			break
		}
	}
	at := next.Local().Format("15:04:05")
	if d >= 12*time.Hour {
		at = next.Local().Format("2006-01-02 15:04:05")
	}
	return fmt.Sprintf("waiting for %s: %sthe next call may go at %s (in %s)", where, full, at, roundDuration(d))
}
