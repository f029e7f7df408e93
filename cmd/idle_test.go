package cmd

import (
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// execIdle runs pace with args in-process on a stdin that never sends a
// byte nor ends (an idle pipe, a terminal nobody types on), sends sig
// once the command has started reading, and returns the exit code and
// stderr. It fails the test if pace does not return within a generous
// deadline after the signal.
func execIdle(t *testing.T, sig os.Signal, stdinTTY bool, args ...string) (code int, stderr string) {
	t.Helper()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	ios, _, errOut := testIO("")
	ios.In = &firstRead{r: pr, started: make(chan struct{})}
	ios.SetStdinTTY(stdinTTY)
	sigs := make(chan os.Signal, 2)
	done := make(chan int, 1)
	go func() { done <- Execute(&Factory{IOStreams: ios, Signals: sigs}, args) }()
	select {
	case <-ios.In.(*firstRead).started:
	case code := <-done:
		t.Fatalf("pace %s = exit %d before reading stdin; stderr %q", strings.Join(args, " "), code, errOut.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("pace %s never read stdin", strings.Join(args, " "))
	}
	sigs <- sig
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("pace %s on an idle stdin ignored %v (still running 20s later); stderr %q", strings.Join(args, " "), sig, errOut.String())
	}
	return code, errOut.String()
}

// firstRead is a reader that closes started at its first Read.
type firstRead struct {
	r       io.Reader
	started chan struct{}
	once    bool
}

func (f *firstRead) Read(p []byte) (int, error) {
	if !f.once {
		f.once = true
		close(f.started)
	}
	return f.r.Read(p)
}

// TestIdleStdinInterrupt: a command reading a stdin on which nothing
// comes ends at SIGINT (130) or SIGTERM (143), never waits for an end of
// input that may never come, and never prints a verdict on what it read.
func TestIdleStdinInterrupt(t *testing.T) {
	for _, tt := range []struct {
		args []string
		sig  os.Signal
		want int
	}{
		{[]string{"run", "--dry-run", "--", "echo", "{}"}, os.Interrupt, ExitInterrupted},
		{[]string{"run", "--dry-run", "--", "echo", "{}"}, syscall.SIGTERM, ExitTerminated},
		{[]string{"fetch", "--dry-run", "http://127.0.0.1:1/{}"}, os.Interrupt, ExitInterrupted},
		{[]string{"audit", "-r", "5/s", "-"}, os.Interrupt, ExitInterrupted},
		{[]string{"audit", "-r", "5/s"}, syscall.SIGTERM, ExitTerminated},
		{[]string{"plot", "-r", "5/s", "-o", "-"}, os.Interrupt, ExitInterrupted},
		{[]string{"plot", "-r", "5/s", "-o", "-", "-"}, syscall.SIGTERM, ExitTerminated},
	} {
		code, stderr := execIdle(t, tt.sig, false, tt.args...)
		if code != tt.want {
			t.Errorf("pace %s, then %v = exit %d, want %d; stderr %q", strings.Join(tt.args, " "), tt.sig, code, tt.want, stderr)
		}
		if strings.Contains(stderr, "ok:") || strings.Contains(stderr, "calls") {
			t.Errorf("pace %s, then %v printed a verdict: %q", strings.Join(tt.args, " "), tt.sig, stderr)
		}
	}
}

// TestIdleTerminalHint: pace audit and pace plot reading the terminal say
// so, and how to end; Ctrl-C there ends them with 130, not a verdict on
// no calls.
func TestIdleTerminalHint(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "-r", "5/s"}, "pace: audit: reading calls from the terminal, one per line; end with Ctrl-D\n" +
			"pace: SIGINT: audit of stdin stopped: no verdict\n"},
		{[]string{"plot", "-o", "-"}, "pace: plot: reading the job log from the terminal; end with Ctrl-D\n" +
			"pace: SIGINT: plot of stdin stopped: no picture written\n"},
	} {
		code, stderr := execIdle(t, os.Interrupt, true, tt.args...)
		if code != ExitInterrupted || stderr != tt.want {
			t.Errorf("pace %s at a terminal, then Ctrl-C = exit %d, stderr %q; want 130, %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
}

// TestQuotaResetPromptInterrupt: Ctrl-C at pace quota reset's question
// leaves the quota as it was and exits 130.
func TestQuotaResetPromptInterrupt(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := execPace(t, "", "exec", "--key", "gh", "--state", dir, "-r", "1/h", "--wait-only"); code != 0 {
		t.Fatalf("pace exec --wait-only = %d, %q", code, stderr)
	}
	code, stderr := execIdle(t, os.Interrupt, true, "quota", "reset", "--key", "gh", "--state", dir)
	if code != ExitInterrupted || !strings.HasSuffix(stderr, "[y/N] \npace: SIGINT: quota \"gh\" in "+dir+" left as it was\n") {
		t.Errorf("pace quota reset, then Ctrl-C at its question = exit %d, stderr %q; want 130, the quota left as it was", code, stderr)
	}
	if _, err := os.Stat(dir + "/gh.db"); err != nil {
		t.Errorf("the quota is gone after Ctrl-C at the question: %v", err)
	}
}
