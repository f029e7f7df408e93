package resume

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/runner"
)

// echoCommand is the job log Command of a job running "echo ITEM".
func echoCommand(job *runner.Job) (string, error) { return "echo " + job.Item, nil }

// logRows returns job log entries for "seq:exit" pairs, each running
// "echo itemSEQ" unless the pair is "seq:exit:command".
func logRows(pairs ...string) []joblog.Entry {
	var es []joblog.Entry
	for _, p := range pairs {
		f := strings.Split(p, ":")
		var e joblog.Entry
		fmt.Sscan(f[0], &e.Seq)
		fmt.Sscan(f[1], &e.Exit)
		e.Command = fmt.Sprintf("echo item%d", e.Seq)
		if len(f) > 2 {
			e.Command = f[2]
		}
		es = append(es, e)
	}
	return es
}

func TestResumeSkip(t *testing.T) {
	// Seq 2 failed, then its retry succeeded; seq 3 succeeded on a first
	// run, then failed on a --resume-failed one (not possible, but the
	// last row must win); seq 4 was killed; seq 5 has no row.
	rows := logRows("1:0", "2:1", "2:0", "3:0", "3:2", "4:-1")
	rows[5].Signal = 15
	tests := []struct {
		mode Mode
		want []bool // Skip(1..5)
	}{
		{All, []bool{true, true, true, true, false}},
		{Failed, []bool{true, true, false, false, false}},
		{0, []bool{true, true, true, true, false}}, // the zero mode is All
	}
	for _, tt := range tests {
		r := New(rows, Options{Mode: tt.mode})
		var got []bool
		for seq := int64(1); seq <= 5; seq++ {
			got = append(got, r.Skip(seq))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("mode %d: Skip(1..5) = %v, want %v", tt.mode, got, tt.want)
		}
		if r.MaxSeq() != 4 {
			t.Errorf("MaxSeq() = %d, want 4", r.MaxSeq())
		}
	}
	failed := New(rows, Options{Mode: Failed})
	for _, tt := range []struct{ upTo, want int64 }{{-1, 2}, {1, 1}, {10, 2}, {0, 0}} {
		if n := failed.Skipping(tt.upTo); n != tt.want {
			t.Errorf("Skipping(%d) = %d, want %d", tt.upTo, n, tt.want)
		}
	}
}

func TestResumeVerify(t *testing.T) {
	rows := logRows("1:0", "2:0:echo other", "3:0:run 3 in slot 2")
	r := New(rows, Options{Command: echoCommand})
	if err := r.Verify(runner.Job{Seq: 1, Item: "item1"}); err != nil {
		t.Errorf("Verify(seq 1, same command) = %v, want nil", err)
	}
	if err := r.Verify(runner.Job{Seq: 9, Item: "anything"}); err != nil {
		t.Errorf("Verify(seq 9, not logged) = %v, want nil", err)
	}
	err := r.Verify(runner.Job{Seq: 2, Item: "item2"})
	var ice *InputChangedError
	if !errors.As(err, &ice) || !errors.Is(err, ErrInputChanged) {
		t.Fatalf("Verify(seq 2, changed) = %v, want an *InputChangedError", err)
	}
	if ice.Seq != 2 || ice.Command != "echo item2" || ice.Logged != "echo other" {
		t.Errorf("InputChangedError = %+v", ice)
	}
	for _, want := range []string{"item 2", `"echo item2"`, `"echo other"`, "same input"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// A command using the slot matches in any slot.
	slotted := New(rows, Options{Command: func(j *runner.Job) (string, error) {
		return fmt.Sprintf("run %s in slot %d", strings.TrimPrefix(j.Item, "item"), j.Slot), nil
	}})
	if err := slotted.Verify(runner.Job{Seq: 3, Item: "item3"}); err != nil {
		t.Errorf("Verify(slot-dependent command) = %v, want nil", err)
	}
	if err := slotted.Verify(runner.Job{Seq: 1, Item: "item1"}); err == nil {
		t.Errorf("Verify(slot-dependent command that differs) = nil, want an error")
	}

	// An item that cannot be prepared, or no Command, is not checked.
	failing := New(rows, Options{Command: func(*runner.Job) (string, error) { return "", errors.New("gone") }})
	if err := failing.Verify(runner.Job{Seq: 2, Item: "x"}); err != nil {
		t.Errorf("Verify with a failing Command = %v, want nil", err)
	}
	if err := New(rows, Options{}).Verify(runner.Job{Seq: 2, Item: "x"}); err != nil {
		t.Errorf("Verify without Command = %v, want nil", err)
	}
}

// readResumed runs r.ReadItems over input and returns what it sent.
func readResumed(t *testing.T, r *State, input string) ([]runner.Item, error) {
	t.Helper()
	out := make(chan runner.Item)
	errc := make(chan error, 1)
	go func() {
		defer close(out)
		errc <- r.ReadItems(context.Background(), strings.NewReader(input), items.ReadOptions{}, out)
	}()
	var got []runner.Item
	for it := range out {
		got = append(got, it)
	}
	return got, <-errc
}

func TestResumeReadItems(t *testing.T) {
	rows := logRows("1:0", "3:1", "2:0")
	r := New(rows, Options{Mode: Failed, Command: echoCommand})
	got, err := readResumed(t, r, "item1\nitem2\nitem3\nitem4\nitem5\n")
	if err != nil {
		t.Fatalf("ReadItems error: %v", err)
	}
	want := []runner.Item{{Text: "item1", Skip: true}, {Text: "item2", Skip: true}, {Text: "item3"}, {Text: "item4"}, {Text: "item5"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadItems sent %+v, want %+v", got, want)
	}

	// An input shorter than the log is fine.
	got, err = readResumed(t, r, "item1\n")
	if err != nil || !reflect.DeepEqual(got, want[:1]) {
		t.Errorf("ReadItems(short input) = %+v, %v; want %+v", got, err, want[:1])
	}

	// A changed item, even the last one the log knows, stops everything
	// before a single item is sent.
	got, err = readResumed(t, r, "item1\nitem2\nitem3 changed\nitem4\n")
	if !errors.Is(err, ErrInputChanged) || len(got) != 0 {
		t.Errorf("ReadItems(changed input) = %+v, %v; want nothing and ErrInputChanged", got, err)
	}
}

// instantExec succeeds at once for every job, recording the jobs it ran.
type instantExec struct {
	mu  sync.Mutex
	ran []string
}

func (e *instantExec) Prepare(job *runner.Job) error {
	job.Argv = []string{"echo", job.Item}
	return nil
}

func (e *instantExec) Execute(_ context.Context, job *runner.Job) *runner.Result {
	e.mu.Lock()
	e.ran = append(e.ran, fmt.Sprintf("%d:%s", job.Seq, job.Item))
	e.mu.Unlock()
	return &runner.Result{ExitCode: 0}
}

func TestPoolSkipsResumedItemsKeepingSeq(t *testing.T) {
	for _, keepOrder := range []bool{false, true} {
		ex := &instantExec{}
		var done []string
		p, err := runner.NewPool(runner.Options{Jobs: 1, Executor: ex, KeepOrder: keepOrder, OnEvent: func(ev runner.Event) {
			if ev.Kind == runner.JobDone {
				done = append(done, fmt.Sprintf("%d:%s", ev.Job.Seq, ev.Job.Item))
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		r := New(logRows("1:0", "2:0", "4:0"), Options{Command: echoCommand})
		in := make(chan runner.Item)
		go func() {
			defer close(in)
			r.ReadItems(context.Background(), strings.NewReader("item1\nitem2\nitem3\nitem4\nitem5\n"), items.ReadOptions{}, in)
		}()
		if err := p.Run(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		want := []string{"3:item3", "5:item5"}
		if !slices.Equal(ex.ran, want) || !slices.Equal(done, want) {
			t.Errorf("keepOrder %v: ran %v, done %v; want %v", keepOrder, ex.ran, done, want)
		}
	}
}
