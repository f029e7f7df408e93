package quota

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// waitNoteAfter is how long pace exec's admission waits, on a terminal,
// before pace says what it waits on (with -v it says so at once).
const waitNoteAfter = time.Second

// WaitNote says on w what the admission of a call to the shared quota
// key (of the Redis at url, or of the local store in dir, as Look reads
// them) waits on and until when: at once (before the admission) with
// verbose, else once it has waited waitNoteAfter when tty (stderr is a
// terminal), else never. It returns the function to call once the
// admission has returned; nothing is printed after it.
func WaitNote(ctx context.Context, url, dir, key string, w io.Writer, verbose, tty bool) (stop func()) {
	if verbose {
		if s := describeWait(ctx, url, dir, key); s != "" {
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
		s := describeWait(ictx, url, dir, key)
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

// describeWait looks at the quota, without changing it, and says what a
// call would wait on and until when, or "" when it would go at once or
// the quota cannot be read (the admission reports that).
func describeWait(ctx context.Context, url, dir, key string) string {
	v, err := Look(ctx, url, dir, key)
	if err != nil {
		return ""
	}
	return v.WaitText()
}
