package joblog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// scanAll returns what Scan finds in in, and the rows it passes.
func scanAll(in string) (Scanned, []Entry, error) {
	var rows []Entry
	sc, err := Scan(strings.NewReader(in), func(_ Format, e Entry) error {
		rows = append(rows, e)
		return nil
	})
	return sc, rows, err
}

func TestScanCutShort(t *testing.T) {
	head := Header + " (pace rules: 3/s)\n" + "1\t:\t1700000000.000000\t     0.100\t0\t0\t0\t0\techo 1\n"
	for _, tt := range []struct {
		name  string
		tail  string
		start bool // it holds its Starttime whole
		cost  bool // and its Send
	}{
		{"cut in its Seq", "2", false, false},
		{"cut in its Starttime", "2\t:\t17000", false, false},
		{"cut just before the tab after its Starttime", "2\t:\t1700000000.500000", false, false},
		{"cut just after it", "2\t:\t1700000000.500000\t", true, false},
		{"cut in its Send", "2\t:\t1700000000.500000\t     0.1\t1", true, false},
		{"cut in its Signal", "2\t:\t1700000000.500000\t     0.100\t7\t0\t0\t", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc, rows, err := scanAll(head + tt.tail)
			if err != nil || len(rows) != 1 || sc.CutShort == nil {
				t.Fatalf("Scan = %d rows, cut short %+v, %v; want row 1 and %q cut short", len(rows), sc.CutShort, err, tt.tail)
			}
			p := sc.CutShort
			if p.Line != 3 || p.Text != tt.tail {
				t.Errorf("CutShort = line %d %q, want line 3 %q", p.Line, p.Text, tt.tail)
			}
			if p.HasStart() != tt.start || p.HasCost() != tt.cost {
				t.Errorf("HasStart, HasCost = %v, %v; want %v, %v", p.HasStart(), p.HasCost(), tt.start, tt.cost)
			}
			if want := time.Unix(1700000000, 5e8); tt.start && !p.Entry.Start.Equal(want) || !tt.start && !p.Entry.Start.IsZero() {
				t.Errorf("Entry.Start = %v, want %v if held, else zero", p.Entry.Start, want)
			}
			if tt.cost && p.Entry.Send != 7 {
				t.Errorf("Entry.Send = %d, want 7", p.Entry.Send)
			}
			if len(sc.Rules) != 1 || sc.Format != JobLog {
				t.Errorf("Scan = format %v, rules %v; want a job log of 3/s", sc.Format, sc.Rules)
			}
		})
	}

	// Anywhere but at the end, a row cut short is an error, as is a last
	// line that could be no row's start.
	for _, in := range []string{
		head + "2\t:\t17000\n",
		head + "2\t:\t17000\n3\t:\t1700000000.900000\t     0.100\t0\t0\t0\t0\techo 3\n",
		head + "2\t:\tnoon",
	} {
		_, _, err := scanAll(in)
		var le *LineError
		if !errors.As(err, &le) || le.Line != 3 {
			t.Errorf("Scan(%q) = %v, want a *LineError for line 3", in, err)
		}
	}
}

// checkEveryCut cuts the row of e after each of its bytes, as a killed
// pace's write may, and checks that Scan takes each cut for a row cut
// short that holds exactly the fields before the cut. A cut in the
// Command counts only at a page boundary, which the log is padded to.
func checkEveryCut(t *testing.T, e Entry) {
	t.Helper()
	row := strings.TrimSuffix(string(AppendEntry(nil, e)), "\n")
	// want is e as read back: Start to the microsecond, Runtime to the ms.
	want, msg := parseRow(row)
	if msg != "" {
		t.Fatalf("parseRow(AppendEntry(%+v)) = %s", e, msg)
	}
	for c := 1; c < len(row); c++ {
		cut := row[:c]
		whole := min(strings.Count(cut, "\t"), 8) // a Command may hold tabs
		log := Header + "\n"
		if whole == 8 { // blank lines up to the page boundary
			log += strings.Repeat("\n", (4096-(len(log)+len(cut))%4096)%4096)
		}
		sc, rows, err := scanAll(log + cut)
		if err != nil || len(rows) != 0 || sc.CutShort == nil {
			t.Fatalf("Scan(row cut at %d: %q) = %d rows, cut short %+v, %v; want it cut short", c, cut, len(rows), sc.CutShort, err)
		}
		p := sc.CutShort
		if p.HasStart() != (whole > 2) || p.HasCost() != (whole > 4) || p.HasRuntime() != (whole > 3) || p.HasExit() != (whole > 7) {
			t.Fatalf("cut at %d (%q): HasStart %v, HasRuntime %v, HasCost %v, HasExit %v; want fields 1 to %d whole",
				c, cut, p.HasStart(), p.HasRuntime(), p.HasCost(), p.HasExit(), whole)
		}
		g := p.Entry
		bad := whole > 0 && g.Seq != want.Seq || whole <= 0 && g.Seq != 0 ||
			whole > 1 && g.Host != want.Host || whole <= 1 && g.Host != "" ||
			whole > 2 && !g.Start.Equal(want.Start) || whole <= 2 && !g.Start.IsZero() ||
			whole > 3 && g.Runtime != want.Runtime || whole > 4 && g.Send != want.Send ||
			whole > 5 && g.Receive != want.Receive || whole > 7 && (g.Exit != want.Exit || g.Signal != want.Signal) ||
			whole == 8 && !strings.HasPrefix(want.Command, g.Command)
		if bad {
			t.Fatalf("cut at %d (%q): Entry = %+v, want the fields of %+v before the cut", c, cut, g, want)
		}
		// Its call: at its Starttime and cost if it holds them, else as
		// late (when the log was read) and as costly as it can have been.
		read := time.Unix(1800000000, 250000000)
		wantCall := throttle.Call{At: read, Cost: throttle.MaxLimit}
		if whole > 2 {
			wantCall.At = want.Start
		}
		if whole > 4 {
			wantCall.Cost = want.Cost()
		}
		if got := p.Call(read); !got.At.Equal(wantCall.At) || got.Cost != wantCall.Cost {
			t.Fatalf("cut at %d (%q): Call(read) = %+v, want %+v", c, cut, got, wantCall)
		}
		checkStandIn(t, p, read)
	}
}

// checkStandIn checks that the row standing in for p, written at read,
// reads back as a whole row that says what p held (Entry.Partial), and
// counts as p's call (Entry.Call, Partial.Call).
func checkStandIn(t *testing.T, p *Partial, read time.Time) {
	t.Helper()
	e := p.StandIn(read)
	row := string(AppendEntry(nil, e))
	sc, rows, err := scanAll(Header + "\n" + row)
	if err != nil || len(rows) != 1 || sc.CutShort != nil {
		t.Fatalf("stand-in of %q: Scan(%q) = %+v, %v; want one whole row", p.Text, row, rows, err)
	}
	g := rows[0]
	if !g.StandsIn() || g.Exit != ExitCutShort || g.Signal != p.whole || strings.ContainsAny(g.Command, "\t\n") {
		t.Fatalf("stand-in of %q = %q, want Exitval %d, Signal %d and a Command of one field", p.Text, row, ExitCutShort, p.whole)
	}
	q := g.Partial()
	text := p.Text[:min(len(p.Text), maxQuoted)]
	if q.whole != p.whole || q.Text != text || q.Entry.Seq != p.Entry.Seq || q.Entry.Host != p.Entry.Host ||
		!q.Entry.Start.Equal(p.Entry.Start) || p.HasRuntime() && q.Entry.Runtime != p.Entry.Runtime ||
		p.HasCost() && q.Entry.Send != p.Entry.Send || p.whole > 5 && q.Entry.Receive != p.Entry.Receive {
		t.Fatalf("stand-in of %q (%q): Partial() = %+v, want %+v", p.Text, row, q, p)
	}
	if a, b := g.Call(), p.Call(read); !a.At.Equal(b.At) || a.Cost != b.Cost {
		t.Fatalf("stand-in of %q (%q): Call() = %+v, want the cut row's %+v", p.Text, row, a, b)
	}
}

func TestScanEveryCut(t *testing.T) {
	for _, e := range []Entry{
		{Seq: 12, Host: ":", Start: jobT0, Runtime: 1250 * time.Millisecond, Send: 90, Receive: 1 << 20, Command: "echo a"},
		{Seq: 3, Host: "4/user@host", Start: time.Unix(0, 0), Exit: -1, Signal: 15, Command: "GET http://x/"},
		{Seq: 123456, Host: ":", Start: time.Unix(253402300799, 999999000), Runtime: 9e9 * time.Second, Exit: 255, Command: "x"},
		// Rows standing in for rows cut short, cut short in turn (a pace
		// killed as it wrote one): of a row cut in its Seq, and after its
		// Starttime.
		{Seq: 0, Host: ":", Start: jobT0, Exit: ExitCutShort, Command: standInMark + `"1"`},
		{Seq: 12, Host: ":", Start: jobT0, Exit: ExitCutShort, Signal: 3, Command: standInMark + `"12\t:\t1700000000.123456\t"`},
	} {
		checkEveryCut(t, e)
	}
}

// FuzzScan: Scan never panics, agrees with Read on a job log (the same
// rows, the same row cut short), and any row pace writes, cut after any
// byte, is a row cut short holding the fields before the cut.
func FuzzScan(f *testing.F) {
	head := Header + "\n1\t:\t1700000000.123456\t     1.250\t0\t0\t-1\t15\techo a\n"
	for _, tail := range []string{"", "2", "2\t", "2\t:\t17000", "2\t:\t1700000000.5\t", "2\t:\t1700000000.5\t  0.1\t3\t0\t0\t0\techo b",
		"2\t:\tnoon", "2\t:\t17000\n3\t:\t1\t0\t0\t0\t0\t0\tx\n", "-1\t", "2\t:\t-", "2\t:\t1.2.3"} {
		f.Add(head+tail, 12, int64(1700000000), int64(7), "cmd")
	}
	f.Add("1700000000.25\n17000", 1, int64(0), int64(0), "")
	f.Fuzz(func(t *testing.T, in string, seq int, start, send int64, cmd string) {
		sc, rows, err := scanAll(in)
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Scan(%q) error %v is not a *LineError", in, err)
			}
		} else if sc.Format == JobLog {
			log, err := Read(strings.NewReader(in))
			if err != nil {
				t.Fatalf("Scan(%q) read it, Read = %v", in, err)
			}
			if !entriesEqual(rows, log.Entries) || (sc.CutShort == nil) != (log.CutShort == nil) ||
				sc.CutShort != nil && *sc.CutShort != *log.CutShort {
				t.Fatalf("Scan(%q) = %+v cut %+v; Read = %+v cut %+v", in, rows, sc.CutShort, log.Entries, log.CutShort)
			}
		}

		if seq < 1 || start < 0 || start > maxEpoch || send < 0 || strings.ContainsAny(cmd, "\n\r") {
			return
		}
		checkEveryCut(t, Entry{Seq: seq, Host: ":", Start: time.Unix(start, 0), Send: send, Command: cmd})
	})
}
