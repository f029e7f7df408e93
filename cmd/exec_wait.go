package cmd

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pace-cli/pace/internal/quota"
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
	v, err := quota.Look(ctx, o.URL, o.State, o.Key)
	if err != nil {
		return ""
	}
	return v.WaitText()
}
