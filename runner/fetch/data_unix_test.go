//go:build unix

package fetch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
)

// mkfifo makes a FIFO in a new temporary directory.
func mkfifo(t *testing.T) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "body")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return fifo
}

// TestFetchDataFromFIFO: -d @FILE where FILE is a pipe (-d @<(cmd), a
// FIFO) sends what the pipe holds, and every attempt and item sends those
// same bytes: a pipe can be read once only. Its size is 0, and the body
// used to be sent empty (exit 0), then a retry waited in open(2) for a
// writer for ever.
func TestFetchDataFromFIFO(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	fifo := mkfifo(t)
	content := strings.Repeat("pipe body ", 10000)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(content)
		f.Close()
	}()
	e := newFetch(t, Options{URL: srv.URL + "/{}", Method: "POST", Data: "@" + fifo, HasData: true})
	for seq, item := range []string{"a", "a", "b"} { // a retry, then another item
		res := fetchSeq(t, t.Context(), e, item, int64(seq+1))
		if !res.OK() {
			t.Fatalf("Execute(%s): %s", item, res.Status())
		}
	}
	for i, r := range rec.all() {
		if r.body != content {
			t.Errorf("request %d sent %d bytes, want the pipe's %d", i+1, len(r.body), len(content))
		}
	}
}

// TestFetchDataFromFIFOWithoutWriter: a FIFO that no process writes to
// holds the request, not the run: cancelling the job's context ends the
// wait (it used to block in open(2) beyond the reach of every signal, so
// that pace could not be stopped but by SIGKILL).
func TestFetchDataFromFIFOWithoutWriter(t *testing.T) {
	srv := serve(t, &reqRecorder{})
	fifo := mkfifo(t)
	e := newFetch(t, Options{URL: srv.URL + "/{}", Method: "POST", Data: "@" + fifo, HasData: true})
	job := runner.Job{Seq: 1, Item: "a", Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	done := make(chan *runner.Result, 1)
	go func() { done <- e.Execute(ctx, &job) }()
	select {
	case res := <-done:
		defer res.Close()
		if res.OK() {
			t.Errorf("Execute with no writer on the FIFO succeeded, want a failure")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Execute still waits for the FIFO's writer 10s after its context ended")
	}
}

// TestBodyLenOfFIFO: {body-len} of a pipe is refused, not taken as 0 (the
// size stat gives it), which let every call through a cost rule free.
func TestBodyLenOfFIFO(t *testing.T) {
	fifo := mkfifo(t)
	e := newFetch(t, Options{URL: "http://127.0.0.1/{}", Method: "POST", Data: "@" + fifo, HasData: true})
	if n, err := e.BodyLen(&runner.Job{Seq: 1, Item: "a"}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("BodyLen(FIFO) = %d, %v; want an error saying it is not a regular file", n, err)
	}
}
