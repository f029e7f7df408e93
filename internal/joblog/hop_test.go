package joblog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
)

// The calls an attempt made besides its own (a redirect followed, a
// request sent again) get rows of their own, written with the attempt's
// row and just before it: Read takes them back as calls (Call), as hops
// (Hop, HopRequest), and as no failure.
func TestHopRows(t *testing.T) {
	start := time.Unix(1700000000, 0)
	r := &runner.Result{Job: runner.Job{Seq: 3}, Start: start, Runtime: 3 * time.Second, ExitCode: 0,
		HTTP: &runner.HTTPInfo{StatusCode: 200, Bytes: 5, Hops: []runner.Hop{
			{Start: start.Add(time.Second), Runtime: 250 * time.Millisecond, Cost: 4, Method: "GET", URL: "https://b.example/x?token=REDACTED"},
			{Start: start.Add(2 * time.Second), Runtime: -time.Second, Cost: 0, Method: "GET", URL: "https://b.example/x?token=REDACTED", Again: true},
		}}}
	if HopEntries(&runner.Result{HTTP: &runner.HTTPInfo{}}, true) != nil || HopEntries(&runner.Result{}, true) != nil {
		t.Error("HopEntries of an attempt that made no other call, or ran no request, is not nil")
	}
	hops := HopEntries(r, true)
	want := []Entry{
		{Seq: 3, Host: ":", Start: start.Add(time.Second), Runtime: 250 * time.Millisecond, Send: 4, Exit: ExitHop, Command: "# redirect followed: GET https://b.example/x?token=REDACTED"},
		{Seq: 3, Host: ":", Start: start.Add(2 * time.Second), Send: 1, Exit: ExitHop, Command: "# sent again: GET https://b.example/x?token=REDACTED"},
	}
	if len(hops) != 2 || hops[0] != want[0] || hops[1] != want[1] {
		t.Fatalf("HopEntries = %+v\nwant %+v", hops, want)
	}
	if e := HopEntries(r, false); e[0].Send != 0 || e[1].Send != 0 {
		t.Errorf("without cost rules Send = %d, %d; want 0", e[0].Send, e[1].Send)
	}

	path := filepath.Join(t.TempDir(), "j.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(append(hops, EntryOf(r, "GET https://a.example/x", true))...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ := os.ReadFile(path)
	got, err := readEntries(strings.NewReader(string(data)))
	if err != nil || len(got) != 3 {
		t.Fatalf("read back %d rows (%v) of\n%s", len(got), err, data)
	}
	for i, e := range got {
		req, hop := e.HopRequest()
		switch {
		case i < 2 && (!e.Hop() || e.Failed() || req != "GET https://b.example/x?token=REDACTED" || e.Call().At != want[i].Start || e.Call().Cost != int(want[i].Send)):
			t.Errorf("row %d (%+v): Hop %v, Failed %v, HopRequest %q, Call %+v; want a hop's call, no failure", i, e, e.Hop(), e.Failed(), req, e.Call())
		case i == 2 && (hop || e.Hop() || e.Command != "GET https://a.example/x"):
			t.Errorf("the attempt's own row %+v reads as a hop", e)
		}
	}

	// A row is a hop's only with the mark: GNU parallel's rows, or one
	// whose Exitval alone is -3, are not; nor is a hop row with a Signal.
	for _, e := range []Entry{
		{Exit: ExitHop, Command: "GET https://a.example/"},
		{Exit: -1, Command: "# redirect followed: GET https://a.example/"},
		{Exit: ExitHop, Signal: 9, Command: "# sent again: GET https://a.example/"},
	} {
		if e.Hop() || !e.Failed() {
			t.Errorf("%+v: Hop %v, Failed %v; want a failed row, no hop", e, e.Hop(), e.Failed())
		}
	}
}
