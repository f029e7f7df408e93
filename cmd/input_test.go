//go:build unix

package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptWhileInputBlocks: Ctrl-C while pace prepares its input,
// before the run's own handling of interrupts has begun, stops it at once:
// a FIFO that no process opens for writing (-a f, :::: f), or one whose
// writer sends nothing while pace reads it whole (several sources, pace
// fetch -o FILE finding its one item). The signal was held until the input
// ended: for ever with the FIFO no process opened.
func TestInterruptWhileInputBlocks(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		args   []string
		writer bool // a writer opens the FIFO, then sends nothing
	}{
		{"-a FIFO", []string{"run", "-a", "FIFO", "--", "echo"}, false},
		{":::: FIFO", []string{"run", "--", "echo", "::::", "FIFO"}, false},
		{"sources read whole", []string{"run", "--", "echo", "{1}", "{2}", "::::", "FIFO", ":::", "a"}, true},
		{"fetch -o FILE", []string{"fetch", "-o", filepath.Join(dir, "out"), "-a", "FIFO", "http://127.0.0.1:1/{}"}, true},
	} {
		fifo := filepath.Join(dir, strings.NewReplacer(" ", "", "/", "", ":", "").Replace(tt.name))
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		args := make([]string, len(tt.args))
		for i, a := range tt.args {
			args[i] = strings.ReplaceAll(a, "FIFO", fifo)
		}
		sigs := make(chan os.Signal, 1)
		ios, stdout, stderr := testIO("")
		done := make(chan int, 1)
		go func() { done <- Execute(&Factory{IOStreams: ios, Signals: sigs}, args) }()
		var w *os.File
		if tt.writer {
			// A writer's open succeeds once pace is in its open of the
			// FIFO (Linux counts a reader blocked in open); pace then
			// reads, and gets nothing.
			deadline := time.Now().Add(10 * time.Second)
			for {
				f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
				if err == nil {
					w = f
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: pace never opened the FIFO: %v", tt.name, err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		start := time.Now()
		sigs <- os.Interrupt
		var code int
		select {
		case code = <-done:
		case <-time.After(10 * time.Second):
			code = -1
		}
		d := time.Since(start)
		// Let whatever still waits on the FIFO go: no writer, or no more
		// data.
		if w != nil {
			w.Close()
		} else if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		if code == -1 {
			code = <-done
		}
		if code != ExitInterrupted || d > promptly || stdout.String() != "" || !strings.Contains(stderr.String(), "pace: SIGINT: stopped before anything ran") {
			t.Errorf("%s: Ctrl-C while pace waits on its input: exit %d after %v, stdout %q, stderr %q; want 130 at once, stopped before anything ran", tt.name, code, d.Round(time.Millisecond), stdout, stderr)
		}
	}
}

// TestUnread: a signal openUntilInterrupt took as the input opened is the
// run's to handle ("SIGINT: dry run stopped", the summary): unread gives
// it back first, then the signals that come after it. Taken for good, the
// run went on without it (faults_signals.txtar, once in a loaded run, where
// the signal and the opened input were ready at once).
func TestUnread(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	f := &Factory{Signals: sigs}
	f.unread(os.Interrupt)
	sigs <- syscall.SIGTERM
	for _, want := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		select {
		case got := <-f.Signals:
			if got != want {
				t.Errorf("after unread(SIGINT) and a SIGTERM, Signals gives %v, want %v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("after unread(SIGINT) and a SIGTERM, Signals gives nothing, want %v", want)
		}
	}
}
