package joblog

import (
	"errors"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
)

func TestExitOf(t *testing.T) {
	errBoom := errors.New("boom")
	for _, tt := range []struct {
		name         string
		r            runner.Result
		exit, signal int
	}{
		{"ok", runner.Result{ExitCode: 0}, 0, 0},
		{"exit status", runner.Result{ExitCode: 3}, 3, 0},
		{"killed by pace's second Ctrl-C", runner.Result{ExitCode: -1, Signal: 9}, -1, 9},
		{"timed out, SIGTERM", runner.Result{ExitCode: -1, Signal: 15, TimedOut: true}, -1, 15},
		{"timed out, exited on its own terms", runner.Result{ExitCode: 143, TimedOut: true}, -1, 0},
		{"could not start", runner.Result{ExitCode: -1, Err: errBoom}, 127, 0},
		{"output lost", runner.Result{ExitCode: 0, Err: errBoom}, 1, 0},
		{"fetch 200", runner.Result{ExitCode: 0, HTTP: &runner.HTTPInfo{StatusCode: 200}}, 0, 0},
		{"fetch 404", runner.Result{ExitCode: 1, Err: errBoom, HTTP: &runner.HTTPInfo{StatusCode: 404}}, 404, 0},
		{"fetch 304", runner.Result{ExitCode: 1, Err: errBoom, HTTP: &runner.HTTPInfo{StatusCode: 304}}, 304, 0},
		{"fetch, no response", runner.Result{ExitCode: -1, Err: errBoom, HTTP: &runner.HTTPInfo{}}, -1, 0},
		{"fetch timed out", runner.Result{ExitCode: -1, TimedOut: true, HTTP: &runner.HTTPInfo{}}, -1, 0},
		{"fetch 200, body cut off", runner.Result{ExitCode: -1, Err: errBoom, HTTP: &runner.HTTPInfo{StatusCode: 200}}, -1, 0},
		{"fetch 200, body not written", runner.Result{ExitCode: 0, Err: errBoom, HTTP: &runner.HTTPInfo{StatusCode: 200}}, 1, 0},
	} {
		if exit, signal := ExitOf(&tt.r); exit != tt.exit || signal != tt.signal {
			t.Errorf("%s: ExitOf = %d, %d; want %d, %d", tt.name, exit, signal, tt.exit, tt.signal)
		}
	}
}

func TestEntryOf(t *testing.T) {
	start := time.Unix(1700000000, 0)
	out := runner.NewCapture(0, "")
	out.Write([]byte("hello\n"))
	e := EntryOf(&runner.Result{Job: runner.Job{Seq: 7, Cost: 4}, Start: start, Runtime: time.Second, Stdout: out, ExitCode: 2}, "echo x", false)
	if want := (Entry{Seq: 7, Host: ":", Start: start, Runtime: time.Second, Receive: 6, Exit: 2, Command: "echo x"}); e != want {
		t.Errorf("EntryOf = %+v, want %+v", e, want)
	}
	for _, tt := range []struct {
		job, told int
		send      int64
	}{{0, 0, 1}, {7, 0, 7}, {7, 3, 3}} {
		r := &runner.Result{Job: runner.Job{Cost: tt.job}, Cost: tt.told, HTTP: &runner.HTTPInfo{StatusCode: 200, Bytes: 9}}
		if e := EntryOf(r, "GET u", true); e.Send != tt.send || e.Receive != 9 {
			t.Errorf("EntryOf(estimate %d, told %d) Send, Receive = %d, %d; want %d, 9 (the body)", tt.job, tt.told, e.Send, e.Receive, tt.send)
		}
	}
}
