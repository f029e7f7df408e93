package localstore

import (
	"testing"
	"time"
)

// FuzzParseSpec: a store file's rule spec is read back by pace quota show
// from a file that any process of the group may have written: whatever it
// holds is an error or a layout, never a panic; a spec newLayout wrote
// reads back as the same spec.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"10/s", "5/s,100/min global-jobs=4", "3/s counter-above=2", "cost:100/min,2/s",
		"", " ", "counter-above=-1 5/s", "global-jobs=99999999999999999999", "0/s", "5/0s",
		"counter-above=5", "1/ms,1000000/day,cost:1/h counter-above=0 global-jobs=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		ly, err := parseSpec(spec)
		if err != nil {
			return
		}
		if len(ly.counter) != len(ly.sorted) {
			t.Fatalf("parseSpec(%q): %d rules but %d counter flags", spec, len(ly.sorted), len(ly.counter))
		}
		for _, r := range ly.sorted {
			if !r.Valid() {
				t.Fatalf("parseSpec(%q) gave the invalid rule %+v", spec, r)
			}
		}
		again, err := parseSpec(ly.spec)
		if err != nil || again.spec != ly.spec {
			t.Fatalf("parseSpec(%q) wrote %q, which reads back as %q, %v", spec, ly.spec, again.spec, err)
		}
	})
}

// FuzzParseHolder: a slot file says who holds it, written by another
// process: anything it holds is read or refused, never a panic, and what
// holderInfo.String writes reads back the same.
func FuzzParseHolder(f *testing.F) {
	f.Add("pid=42 started=1700000000000000000 since=1700000001000000000\n", int64(42), int64(1), int64(2))
	f.Add("", int64(0), int64(0), int64(0))
	f.Add("pid=x", int64(-1), int64(-1), int64(-1))
	f.Add("pid=99999999999999999999999 =5 since", int64(1<<62), int64(-1<<63), int64(1<<63-1))
	f.Fuzz(func(t *testing.T, s string, pid, started, since int64) {
		_, _ = parseHolder(s)
		if pid < 0 || int64(int(pid)) != pid {
			return
		}
		h := holderInfo{PID: int(pid), Started: time.Unix(0, started), Since: time.Unix(0, since)}
		got, ok := parseHolder(h.String())
		if !ok || got.PID != h.PID || !got.Started.Equal(h.Started) || !got.Since.Equal(h.Since) {
			t.Fatalf("parseHolder(%q) = %+v, %v; want %+v", h.String(), got, ok, h)
		}
	})
}
