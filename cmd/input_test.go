//go:build unix

package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
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
// ended: for ever with the FIFO no process opened. The input that opens
// after the signal, once the FIFO has a writer, is closed.
func TestInterruptWhileInputBlocks(t *testing.T) {
	// No collection meanwhile: an input left open is not closed behind
	// the test's back when the collector finds its file unreachable.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
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
			// pace then reads, and gets nothing.
			w = openWriter(t, tt.name, fifo)
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
		// Let whatever still waits on the FIFO go: a writer for the open
		// that waits for one, no more data for the read. The input that
		// opens then, after the signal, is closed.
		if w == nil {
			w = openWriter(t, tt.name, fifo)
		}
		w.Close()
		if code == -1 {
			code = <-done
		}
		waitNoReader(t, tt.name, fifo)
		if code != ExitInterrupted || d > promptly || stdout.String() != "" || !strings.Contains(stderr.String(), "pace: SIGINT: stopped before anything ran") {
			t.Errorf("%s: Ctrl-C while pace waits on its input: exit %d after %v, stdout %q, stderr %q; want 130 at once, stopped before anything ran", tt.name, code, d.Round(time.Millisecond), stdout, stderr)
		}
	}
}

// openWriter opens fifo for writing once pace is in its open of it (Linux
// counts a reader blocked in open(2)), or has it open: the open waits no
// more.
func openWriter(t *testing.T, name, fifo string) *os.File {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: pace never opened the FIFO: %v", name, err)
		}
	}
}

// waitNoReader waits up to 10 seconds until fifo has no reader, neither
// an open of it that waits for a writer nor a descriptor open on it (a
// writer's open without waiting then fails, ENXIO), and fails the test if
// that never comes: an open of fifo that returned after an interrupt left
// its input open.
func waitNoReader(t *testing.T, name, fifo string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, syscall.ENXIO) {
			return
		}
		if err == nil {
			w.Close()
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: the input that opened after Ctrl-C is still open 10s later (a writer's open: %v)", name, err)
			return
		}
	}
}
