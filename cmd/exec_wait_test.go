package cmd

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
)

// TestExecSaysWhatItWaitsOn: pace exec -v whose call must wait says, before
// it waits, which quota, which rule is full and when the next call may go;
// an interrupt then stops it (130), nothing run. The same for Redis.
func TestExecSaysWhatItWaitsOn(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	srv := redistest.Start(t)
	for _, where := range [][]string{
		{"--state", t.TempDir()},
		{"--redis", "redis://" + srv.Addr()},
	} {
		args := append([]string{"exec", "--key", "w", "-r", "1/h", "--wait-only"}, where...)
		if code, _, stderr := execPace(t, "", args...); code != 0 {
			t.Fatalf("pace %s = %d, %q", strings.Join(args, " "), code, stderr)
		}
		ios, _, errOut := testIO("")
		sigs := make(chan os.Signal, 1)
		done := make(chan int, 1)
		args = append(args, "-v")
		go func() { done <- Execute(&Factory{IOStreams: ios, Signals: sigs}, args) }()
		want := regexp.MustCompile(`pace: waiting for quota "w" \((local|redis) .*\): 1/h is full \(1/1 used\); the next call may go at [0-9:]{8} \(in (59m|1h)`)
		waitFor(t, "the note on what pace exec waits on", func() bool { return want.MatchString(errOut.String()) })
		sigs <- os.Interrupt
		select {
		case code := <-done:
			if code != ExitInterrupted {
				t.Errorf("pace %s, then SIGINT = exit %d, want 130; stderr %q", strings.Join(args, " "), code, errOut)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("pace %s ignored SIGINT while waiting", strings.Join(args, " "))
		}
	}
}
