package interrupt

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/runner"
)

// syncBuffer is a strings.Builder safe for the handler's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// calls records what the handler called.
type calls struct {
	mu     sync.Mutex
	stops  int
	kills  []error
	setups int
}

func (c *calls) stop()  { c.mu.Lock(); c.stops++; c.mu.Unlock() }
func (c *calls) setup() { c.mu.Lock(); c.setups++; c.mu.Unlock() }

// got returns the calls so far.
func (c *calls) got() (setups, stops int, kills []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setups, c.stops, append([]error(nil), c.kills...)
}

func (c *calls) kill(err error) {
	c.mu.Lock()
	c.kills = append(c.kills, err)
	c.mu.Unlock()
}

// TestBeforeArmCancelsSetup: before the run starts, the first signal
// cancels the setup, says nothing, and is remembered; a second does
// nothing more.
func TestBeforeArmCancelsSetup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sigs := make(chan os.Signal)
		var out syncBuffer
		var c calls
		h := &Handler{Signals: sigs, Grace: time.Minute, Out: &out}
		h.Watch(c.setup)
		defer h.Close()
		sigs <- syscall.SIGTERM
		sigs <- os.Interrupt
		synctest.Wait()
		if setups, _, _ := c.got(); setups != 1 || out.String() != "" || h.Signal() != syscall.SIGTERM {
			t.Errorf("setups %d, out %q, Signal %v; want 1, nothing said, SIGTERM", setups, out.String(), h.Signal())
		}
	})
}

// TestSignalBeforeArmStopsTheRun: a first signal that came during the
// setup, which finished all the same (its cancel came too late to stop
// anything), is the run's first once it is armed: the run stops, with the
// message, and the next signal kills. Before, Arm left it behind: the
// setup's cancel went to a context nothing watched any more, and the run
// (a proxy serving, a pace run's jobs) went on until a second signal
// (proxy_port_file.txtar's wait hung once, under load).
func TestSignalBeforeArmStopsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sigs := make(chan os.Signal)
		var out syncBuffer
		var c calls
		h := &Handler{Signals: sigs, Grace: time.Hour, Out: &out, Noun: "request", Stopping: "accepting no more requests"}
		h.Watch(c.setup)
		defer h.Close()
		sigs <- os.Interrupt
		synctest.Wait()
		h.Arm(func() int { return 0 }, c.stop, c.kill)
		synctest.Wait()
		if setups, stops, kills := c.got(); setups != 1 || stops != 1 || len(kills) != 0 {
			t.Fatalf("a signal in the setup, then Arm: %d setups, %d stops, kills %v; want 1, 1, none", setups, stops, kills)
		}
		if want := "pace: SIGINT: accepting no more requests\n"; out.String() != want {
			t.Errorf("messages %q, want %q", out.String(), want)
		}
		sigs <- os.Interrupt
		synctest.Wait()
		if _, _, kills := c.got(); len(kills) != 1 || !errors.Is(kills[0], runner.ErrKillNow) {
			t.Errorf("the next signal: kills %v, want one runner.ErrKillNow", kills)
		}
		// Armed again (pace run's summary file): nothing is replayed twice.
		h.Arm(func() int { return 0 }, c.stop, c.kill)
		synctest.Wait()
		if _, stops, kills := c.got(); stops != 1 || len(kills) != 1 {
			t.Errorf("armed again: %d stops, kills %v; want the same 1 and one", stops, kills)
		}
	})
}

// TestSecondSignalKills: once armed, the first signal stops admissions,
// the second kills with runner.ErrKillNow, and the messages count what
// runs with the handler's noun.
func TestSecondSignalKills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sigs := make(chan os.Signal)
		var out syncBuffer
		var c calls
		h := &Handler{Signals: sigs, Grace: time.Hour, Out: &out, Noun: "request", Stopping: "accepting no more requests"}
		h.Watch(c.setup)
		defer h.Close()
		h.Arm(func() int { return 2 }, c.stop, c.kill)
		sigs <- os.Interrupt
		synctest.Wait()
		if _, stops, kills := c.got(); stops != 1 || len(kills) != 0 {
			t.Fatalf("after one signal: %d stops, kills %v; want 1 stop, no kill", stops, kills)
		}
		sigs <- os.Interrupt
		synctest.Wait()
		if setups, _, kills := c.got(); len(kills) != 1 || !errors.Is(kills[0], runner.ErrKillNow) || setups != 0 {
			t.Errorf("after two signals: kills %v, setups %d; want one runner.ErrKillNow, no setup", kills, setups)
		}
		want := "pace: SIGINT: accepting no more requests; waiting up to 1h0m0s for 2 running (interrupt again to kill them)\n" +
			"pace: SIGINT again: killing 2 running requests\n"
		if out.String() != want {
			t.Errorf("messages:\n%s\nwant:\n%s", out.String(), want)
		}
	})
}

// armedHandler returns a handler armed with running jobs, the channel
// its signals come on, what it says and what it called.
func armedHandler(t *testing.T, running int) (chan os.Signal, *syncBuffer, *calls, *Handler) {
	sigs, out, c := make(chan os.Signal), &syncBuffer{}, &calls{}
	h := &Handler{Signals: sigs, Grace: time.Hour, Out: out}
	h.Watch(c.setup)
	t.Cleanup(h.Close)
	h.Arm(func() int { return running }, c.stop, c.kill)
	return sigs, out, c, h
}

// TestQuitKillsAtOnce: SIGQUIT (Ctrl-\) stops admissions and kills what
// runs at once, with no grace; SIGHUP stops as SIGTERM does.
func TestQuitKillsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sigs, out, c, h := armedHandler(t, 3)
		sigs <- syscall.SIGQUIT
		synctest.Wait()
		if _, stops, kills := c.got(); stops != 1 || len(kills) != 1 || !errors.Is(kills[0], runner.ErrKillNow) {
			t.Errorf("after SIGQUIT: %d stops, kills %v; want 1 stop and runner.ErrKillNow", stops, kills)
		}
		if want := "pace: SIGQUIT: killing 3 running jobs\n"; out.String() != want || h.Signal() != syscall.SIGQUIT {
			t.Errorf("messages %q, Signal %v; want %q, SIGQUIT", out.String(), h.Signal(), want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		sigs, out, c, _ := armedHandler(t, 1)
		sigs <- syscall.SIGHUP
		synctest.Wait()
		if _, stops, kills := c.got(); stops != 1 || len(kills) != 0 || !strings.HasPrefix(out.String(), "pace: SIGHUP: starting no more jobs") {
			t.Errorf("after SIGHUP: %d stops, kills %v, messages %q; want a stop as SIGTERM's", stops, kills, out.String())
		}
	})
}

// TestGraceOver: the grace period's end kills with ErrGraceOver, exactly
// at its end, and says so only when something still runs.
func TestGraceOver(t *testing.T) {
	for _, running := range []int{0, 1} {
		synctest.Test(t, func(t *testing.T) {
			sigs := make(chan os.Signal)
			var out syncBuffer
			var c calls
			h := &Handler{Signals: sigs, Grace: 5 * time.Second, Out: &out}
			h.Watch(c.setup)
			defer h.Close()
			h.Arm(func() int { return running }, c.stop, c.kill)
			start := time.Now()
			sigs <- syscall.SIGTERM
			time.Sleep(5*time.Second - time.Nanosecond)
			synctest.Wait()
			if _, _, kills := c.got(); len(kills) != 0 {
				t.Fatalf("killed before the grace period ended: %v", kills)
			}
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			if _, _, kills := c.got(); len(kills) != 1 || !errors.Is(kills[0], ErrGraceOver) || time.Since(start) != 5*time.Second {
				t.Errorf("kills %v; want ErrGraceOver once, at 5s", kills)
			}
			said := strings.Contains(out.String(), "pace: grace period of 5s over: stopping 1 running job\n")
			if said != (running > 0) {
				t.Errorf("with %d running, messages %q", running, out.String())
			}
		})
	}
}

// TestContext: the first signal cancels the context and end returns it;
// without one, end returns nil and the context stays live.
func TestContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sigs := make(chan os.Signal)
		ctx, cancel, end := Context(context.Background(), sigs)
		defer cancel()
		sigs <- syscall.SIGTERM
		<-ctx.Done()
		if sig := end(); sig != syscall.SIGTERM {
			t.Errorf("end() = %v, want SIGTERM", sig)
		}
		ctx, cancel, end = Context(context.Background(), sigs)
		defer cancel()
		if sig := end(); sig != nil || ctx.Err() != nil {
			t.Errorf("end() without a signal = %v, ctx %v", sig, ctx.Err())
		}
	})
}

func TestName(t *testing.T) {
	if Name(os.Interrupt) != "SIGINT" || Name(syscall.SIGTERM) != "SIGTERM" || Name(syscall.SIGHUP) != "SIGHUP" ||
		Name(syscall.SIGQUIT) != "SIGQUIT" || Name(syscall.SIGUSR1) != "user defined signal 1" {
		t.Errorf("Name: %s %s %s %s %s", Name(os.Interrupt), Name(syscall.SIGTERM), Name(syscall.SIGHUP), Name(syscall.SIGQUIT), Name(syscall.SIGUSR1))
	}
}
