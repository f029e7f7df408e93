package resume

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	if again, all := failed.Again(), New(rows, Options{Mode: All}).Again(); again != 2 || all != 0 {
		t.Errorf("Again() = %d under Failed, %d under All; want 2, 0", again, all)
	}
	for _, tt := range []struct{ upTo, want int64 }{{-1, 2}, {1, 1}, {10, 2}, {0, 0}} {
		if n := failed.Skipping(tt.upTo); n != tt.want {
			t.Errorf("Skipping(%d) = %d, want %d", tt.upTo, n, tt.want)
		}
	}
}

// TestResumeStandIn: a row standing in for a row cut short (a pace killed
// as it wrote it) counts for nothing, in either mode: its item runs again,
// as it would had the row been cut off, unless an earlier row of it says
// otherwise; its Command (a comment) is not checked against the input.
func TestResumeStandIn(t *testing.T) {
	cut := func(text string) joblog.Entry {
		sc, err := joblog.Read(strings.NewReader(joblog.Header + "\n" + text))
		if err != nil || sc.CutShort == nil {
			t.Fatalf("Read(%q) = %+v, %v; want it cut short", text, sc, err)
		}
		return sc.CutShort.StandIn(sc.CutShort.Entry.Start)
	}
	// Seq 1 ran; seq 2 was cut short; seq 3 and 4 failed, then their
	// retries were cut short (the last whole row counts, whatever the cut
	// row held: 4's holds an Exitval of 0); and a row was cut within its Seq.
	rows := append(logRows("1:0"), cut("2\t:\t1700000000.5\t"))
	rows = append(rows, logRows("3:1", "4:1")...)
	rows = append(rows, cut("3\t:\t17"), cut("4\t:\t1700000000.5\t0.1\t0\t0\t0\t"), cut("5"))
	checkSkips(t, rows, 4, map[Mode][]bool{
		All:    {true, false, true, true, false},
		Failed: {true, false, false, false, false},
	})
}

// checkSkips checks, for each mode, which of items 1..len(want) a resume
// from rows skips, that each item's command passes Verify (rows of no
// item's command, stand-ins and hops, are not compared), and that the
// highest Seq of an item's own row is maxSeq.
func checkSkips(t *testing.T, rows []joblog.Entry, maxSeq int64, want map[Mode][]bool) {
	t.Helper()
	for _, mode := range []Mode{All, Failed} {
		r := New(rows, Options{Mode: mode, Command: echoCommand})
		var got []bool
		for seq := int64(1); seq <= int64(len(want[mode])); seq++ {
			got = append(got, r.Skip(seq))
			if err := r.Verify(runner.Job{Seq: seq, Item: fmt.Sprintf("item%d", seq)}); err != nil {
				t.Errorf("mode %d: Verify(item %d) = %v, want nil", mode, seq, err)
			}
		}
		if !slices.Equal(got, want[mode]) || r.MaxSeq() != maxSeq {
			t.Errorf("mode %d: Skip(1..%d) = %v, MaxSeq %d; want %v, %d", mode, len(got), got, r.MaxSeq(), want[mode], maxSeq)
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
	want := []runner.Item{{Skip: true}, {Skip: true}, {Text: "item3"}, {Text: "item4"}, {Text: "item5"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadItems sent %+v, want %+v", got, want)
	}

	// An input shorter than the log is fine.
	got, err = readResumed(t, r, "item1\n")
	if err != nil || !reflect.DeepEqual(got, want[:1]) {
		t.Errorf("ReadItems(short input) = %+v, %v; want %+v", got, err, want[:1])
	}

	// A changed item, even the last one the log knows, stops everything
	// before a single item that runs is sent.
	got, err = readResumed(t, r, "item1\nitem2\nitem3 changed\nitem4\n")
	if !errors.Is(err, ErrInputChanged) || slices.ContainsFunc(got, func(it runner.Item) bool { return !it.Skip }) {
		t.Errorf("ReadItems(changed input) = %+v, %v; want only Skip markers and ErrInputChanged", got, err)
	}
}

func TestResumeReadItemsOrder(t *testing.T) {
	// Seq 2 and 6 have no row, seq 4 failed; the item after a held one
	// keeps its place behind it.
	rows := logRows("1:0", "3:0", "4:1", "5:0", "7:0")
	input := "item1\nitem2\nitem3\nitem4\nitem5\nitem6\nitem7\nitem8\n"
	skip := runner.Item{Skip: true}
	for _, tt := range []struct {
		mode Mode
		want []runner.Item
	}{
		{All, []runner.Item{skip, {Text: "item2"}, skip, skip, skip, {Text: "item6"}, skip, {Text: "item8"}}},
		{Failed, []runner.Item{skip, {Text: "item2"}, skip, {Text: "item4"}, skip, {Text: "item6"}, skip, {Text: "item8"}}},
	} {
		got, err := readResumed(t, New(rows, Options{Mode: tt.mode, Command: echoCommand}), input)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("mode %d: ReadItems = %+v, %v; want %+v", tt.mode, got, err, tt.want)
		}
		// Item 7 changed: only the Skip marker of item 1, sent before any
		// item that runs, goes out.
		changed := strings.Replace(input, "item7", "item7 changed", 1)
		got, err = readResumed(t, New(rows, Options{Mode: tt.mode, Command: echoCommand}), changed)
		if !errors.Is(err, ErrInputChanged) || !reflect.DeepEqual(got, []runner.Item{skip}) {
			t.Errorf("mode %d: ReadItems(item 7 changed) = %+v, %v; want [skip] and ErrInputChanged", tt.mode, got, err)
		}
	}
}

// lineReader yields one line of its input per Read, as a pipe written a
// line at a time does, and counts the lines read.
type lineReader struct {
	rest  string
	lines atomic.Int64
}

func (l *lineReader) Read(p []byte) (int, error) {
	if l.rest == "" {
		return 0, io.EOF
	}
	n := copy(p, l.rest[:strings.IndexByte(l.rest, '\n')+1])
	l.rest = l.rest[n:]
	l.lines.Add(1)
	return n, nil
}

// numbered returns "item1\n" to "itemN\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "item%d\n", i)
	}
	return b.String()
}

func TestResumeReadItemsSendsSkipsAtOnce(t *testing.T) {
	// A long run that is all done: each Skip marker goes out as its item is
	// read, not once the log's highest Seq is reached, so nothing is held.
	const n = 20000
	var pairs []string
	for i := 1; i <= n; i++ {
		pairs = append(pairs, fmt.Sprintf("%d:0", i))
	}
	r := New(logRows(pairs...), Options{Command: echoCommand})
	rd := &lineReader{rest: numbered(n + 1)}
	out := make(chan runner.Item)
	errc := make(chan error, 1)
	go func() {
		defer close(out)
		errc <- r.ReadItems(context.Background(), rd, items.ReadOptions{}, out)
	}()
	var got, most int64
	for it := range out {
		// Reading stops at each send until this loop takes the item, so
		// the reader can be a line or two ahead of it at most.
		if ahead := rd.lines.Load() - got; ahead > most {
			most = ahead
		}
		got++
		if it.Skip != (got <= n) {
			t.Fatalf("item %d: Skip = %v", got, it.Skip)
		}
	}
	if err := <-errc; err != nil || got != n+1 {
		t.Fatalf("ReadItems sent %d items, error %v; want %d, nil", got, err, n+1)
	}
	if most > 3 {
		t.Errorf("ReadItems read up to %d items ahead of what it sent, want at most 3: it held the skipped ones", most)
	}
	if r.Skipped() != n {
		t.Errorf("Skipped() = %d, want %d", r.Skipped(), n)
	}
}

func TestResumeReadItemsBoundsReadingAhead(t *testing.T) {
	// A log with a bogus highest Seq over an endless input: the items
	// without a row cannot all be held to check the input first.
	rows := logRows("1:0", "99999999999:0:echo y")
	const maxAhead = 4 << 10
	rd := &lineReader{rest: numbered(100000)}
	r := New(rows, Options{Command: echoCommand, MaxAhead: maxAhead})
	out := make(chan runner.Item)
	errc := make(chan error, 1)
	go func() {
		defer close(out)
		errc <- r.ReadItems(context.Background(), rd, items.ReadOptions{}, out)
	}()
	var got []runner.Item
	for it := range out {
		got = append(got, it)
	}
	err := <-errc
	var ae *AheadError
	if !errors.As(err, &ae) || !errors.Is(err, ErrTooFarAhead) {
		t.Fatalf("ReadItems = %v, want an *AheadError", err)
	}
	if ae.MaxSeq != 99999999999 || ae.Held <= maxAhead || ae.Held > maxAhead+int64(itemSize(runner.Item{Text: "item100000"})) {
		t.Errorf("AheadError = %+v, want MaxSeq 99999999999 and Held just past %d", ae, maxAhead)
	}
	if !reflect.DeepEqual(got, []runner.Item{{Skip: true}}) {
		t.Errorf("ReadItems sent %+v, want only item 1's Skip marker", got)
	}
	if lines := rd.lines.Load(); lines > ae.Seq+1 || ae.Seq > maxAhead/int64(itemSize(runner.Item{})) {
		t.Errorf("ReadItems read %d items, gave up at item %d: want it to stop within %d bytes", lines, ae.Seq, maxAhead)
	}
	for _, want := range []string{"item 99999999999", "this input"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// The default bound is DefaultMaxAhead, or the bytes of the log's
	// Commands when they are more.
	if r := New(rows, Options{}); r.opts.MaxAhead != DefaultMaxAhead {
		t.Errorf("default MaxAhead = %d, want %d", r.opts.MaxAhead, DefaultMaxAhead)
	}
	big := logRows("1:0:" + strings.Repeat("x", DefaultMaxAhead+1))
	if r := New(big, Options{}); r.opts.MaxAhead != DefaultMaxAhead+1 {
		t.Errorf("MaxAhead for a log of %d command bytes = %d, want as many", DefaultMaxAhead+1, r.opts.MaxAhead)
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

// TestResumeVerifyCutCommand: a command too long for a job log row is
// written cut (joblog.FitCommand), and resuming compares it as the row
// holds it: the same command matches, another does not.
func TestResumeVerifyCutCommand(t *testing.T) {
	long := func(item string) string { return "echo" + strings.Repeat(" "+item, 5) }
	big := strings.Repeat("x", 1<<20)
	rows := []joblog.Entry{{Seq: 1, Command: joblog.FitCommand(long(big))}}
	command := func(j *runner.Job) (string, error) { return long(j.Item), nil }
	r := New(rows, Options{Command: command})
	if err := r.Verify(runner.Job{Seq: 1, Item: big}); err != nil {
		t.Errorf("Verify(the command cut in the row) = %.200v, want nil", err)
	}
	err := r.Verify(runner.Job{Seq: 1, Item: big + "y"})
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("Verify(another long command) = %.200v, want ErrInputChanged", err)
	}
	// The message quotes where they differ, not 5 MiB twice.
	if msg := err.Error(); len(msg) > 600 || !strings.Contains(msg, `"…xxx`) {
		t.Errorf("Verify(another long command): error of %d bytes %.400q, want a short one quoting around the difference", len(msg), msg)
	}
}

// The rows of the calls an attempt made besides its own (a redirect, a
// request sent again: joblog.ExitHop) are no rows of its item: their
// Commands are not the item's and their Exitval is no outcome, so neither
// --resume nor --resume-failed, nor the check of the input, reads them.
func TestResumeHopRows(t *testing.T) {
	hop := func(seq int) joblog.Entry {
		return joblog.Entry{Seq: seq, Exit: joblog.ExitHop, Command: "# redirect followed: GET https://b.example/moved"}
	}
	// Item 1: a hop, then its row (ok). Item 2: a hop, its row (failed),
	// then a hop alone (a log cut under the run: no row of 2's retry).
	// Item 3: a hop alone.
	rows := []joblog.Entry{hop(1), logRows("1:0")[0], hop(2), logRows("2:404")[0], hop(2), hop(3)}
	checkSkips(t, rows, 2, map[Mode][]bool{
		All:    {true, true, false},
		Failed: {true, false, false},
	})
}

// A run of -j 100 writes commands of slots past 64: a resume finds them
// from the digits of the logged command, wherever the slot stands.
func TestResumeVerifyHighSlot(t *testing.T) {
	for _, format := range []string{"run %s in slot %d", "run %s in slot 5%d", "run %s in slot %d7 and %[2]d"} {
		command := func(j *runner.Job) (string, error) {
			return fmt.Sprintf(format, strings.TrimPrefix(j.Item, "item"), j.Slot), nil
		}
		var rows []joblog.Entry
		for _, slot := range []int{65, 100, 1000, 123456} {
			logged, _ := command(&runner.Job{Item: "item1", Slot: slot})
			rows = append(rows, logRows("1:0:"+logged)...)
			r := New(rows[len(rows)-1:], Options{Command: command})
			if err := r.Verify(runner.Job{Seq: 1, Item: "item1"}); err != nil {
				t.Errorf("%q: Verify(row of slot %d) = %v, want nil", format, slot, err)
			}
			if err := r.Verify(runner.Job{Seq: 1, Item: "item2"}); err == nil {
				t.Errorf("%q: Verify(another item, row of slot %d) = nil, want an error", format, slot)
			}
		}
	}
}

// An input split into columns is checked by its columns: a command of
// {2} {1} is not the one a log of {1} {2} ran.
func TestResumeReadItemsColumns(t *testing.T) {
	colsCommand := func(j *runner.Job) (string, error) {
		if len(j.Cols) < 2 {
			return "", errors.New("item has no column 2")
		}
		return "echo " + j.Cols[1] + " " + j.Cols[0], nil
	}
	opts := items.ReadOptions{ColSep: regexp.MustCompile(",")}
	r := New(logRows("1:0:echo 1 a", "2:0:echo 2 b"), Options{Command: colsCommand})
	out := make(chan runner.Item, 10)
	if err := r.ReadItems(context.Background(), strings.NewReader("a,1\nb,2\nc,3\n"), opts, out); err != nil {
		t.Errorf("ReadItems(the log's input) = %v, want nil", err)
	}
	r = New(logRows("1:0:echo 1 a", "2:0:echo 1 b"), Options{Command: colsCommand})
	err := r.ReadItems(context.Background(), strings.NewReader("a,1\nb,2\nc,3\n"), opts, make(chan runner.Item, 10))
	if !errors.Is(err, ErrInputChanged) {
		t.Errorf("ReadItems(another input's columns) = %v, want ErrInputChanged", err)
	}
}

// A command logged with other quoting than pace's (GNU parallel writes
// 'it'"'"'s' where pace writes "it's") is the same command when its words
// are; one whose words differ, or that a shell reads as more than words,
// is compared by its text.
func TestSameCommand(t *testing.T) {
	for _, tt := range []struct {
		c, logged string
		same      bool
	}{
		{`echo "it's"`, `echo 'it'"'"'s'`, true},
		{`echo "it's"`, `echo it\'s`, true},
		{`printf '%s\n' 'a b'`, `printf '%s\n' a\ b`, true},
		{`echo '$HOME'`, `echo \$HOME`, true},
		{`echo 'a"b'`, `echo "a\"b"`, true},
		{`echo ''`, `echo ""`, true},
		{`echo 'a b'`, `echo a b`, false},
		{`echo 'a;b'`, `echo a;b`, false},
		{`echo "$HOME"`, `echo '$HOME'`, false},
		{`echo 'x'`, `echo 'x`, false},
		{`echo a*`, `echo 'a*'`, false},
		{`A=1 env`, `'A=1' env`, false},
		{"echo \"a\\\nb\"", "echo ab", false},
		{`echo x`, `echo y`, false},
	} {
		if got := sameCommand(tt.c, tt.logged); got != tt.same {
			t.Errorf("sameCommand(%q, %q) = %v, want %v", tt.c, tt.logged, got, tt.same)
		}
	}
}

// FuzzPlainWords: plainWords never panics, and words it gives back, each
// quoted in single quotes, read back as the same words.
func FuzzPlainWords(f *testing.F) {
	for _, s := range []string{`echo 'it'"'"'s'`, `echo "a\"b" c\ d`, `echo 'x`, `a;b`, `"\`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, ok := plainWords(s)
		if !ok {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, ok := plainWords(strings.Join(quoted, " "))
		if !ok || !slices.Equal(again, words) {
			t.Errorf("plainWords(%q) = %q; quoted again, it reads %q, %v", s, words, again, ok)
		}
	})
}
