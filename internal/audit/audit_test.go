package audit

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/throttle"
)

func TestMedian(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, tt := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{ms(7), 7 * time.Millisecond},
		{ms(9, 1, 5), 5 * time.Millisecond},
		{ms(4, 1, 2, 100), 3 * time.Millisecond},
	} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// endless is a reader that never ends: it repeats unit for ever and
// counts the bytes it gave.
type endless struct {
	unit []byte
	off  int
	n    int64
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.unit[e.off]
		e.off = (e.off + 1) % len(e.unit)
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestAuditEndlessInput: pace audit reads any input, however long, in
// bounded memory and ends with a clear error: bytes without a line break
// (/dev/zero) stop at the line cap, endless valid lines at the call cap,
// each after reading no more than the cap (and a buffer) beyond it.
func TestAuditEndlessInput(t *testing.T) {
	const buffer = 256 << 10
	zero := &endless{unit: []byte{0}}
	_, err := Read(zero, 1000)
	var le *joblog.LineError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "line longer than 4 MiB") {
		t.Errorf("Read(endless NULs) = %v, want a line error: line longer than 4 MiB", err)
	}
	if zero.n > joblog.MaxLine+buffer {
		t.Errorf("Read(endless NULs) read %d bytes, want at most %d: the line cap must stop it", zero.n, joblog.MaxLine+buffer)
	}

	for _, unit := range []string{"1700000000.25\n", "1\t:\t1700000000.5\t0.1\t0\t0\t0\t0\techo 1\n"} {
		lines := &endless{unit: []byte(unit)}
		const max = 1000
		_, err := Read(lines, max)
		if !errors.Is(err, ErrTooManyCalls) || !strings.Contains(err.Error(), "more than 1000") {
			t.Errorf("Read(endless %q) = %v, want too many calls: more than 1000", unit, err)
		}
		if lim := int64((max+1)*len(unit) + buffer); lines.n > lim {
			t.Errorf("Read(endless %q) read %d bytes, want at most %d: the call cap must stop it", unit, lines.n, lim)
		}
	}

	// At the cap exactly, the calls are read.
	c, err := Read(strings.NewReader(strings.Repeat("1700000000.25\n", 5)), 5)
	if err != nil || len(c.Times) != 5 || c.Format != FormatTimestamps {
		t.Errorf("Read(5 timestamps, cap 5) = %+v, %v; want 5 timestamps", c, err)
	}
}

// TestAuditTooManyCalls: the user reads one line saying what the cap is
// and what to do.
func TestAuditTooManyCallsMessage(t *testing.T) {
	_, err := Read(&endless{unit: []byte("1700000000.25\n")}, 3)
	want := "too many calls: more than 3, the most pace audit reads; audit the file in parts (split -l 3)"
	if err == nil || err.Error() != want {
		t.Errorf("Read(endless, cap 3) = %v, want %q", err, want)
	}
}

// A negative JobRuntime (a wall clock stepped back during the job) counts
// as a job of no time, never as a negative median; a negative Send or
// Receive is refused, naming the field.
func TestReadNegativeFields(t *testing.T) {
	row := func(runtime, send string) string {
		return joblog.Header + "\n1\t:\t1700000000.000000\t" + runtime + "\t" + send + "\t0\t0\t0\tx\n"
	}
	c, err := Read(strings.NewReader(row("-100.000", "0")), 10)
	if err != nil || len(c.Runtimes) != 1 || c.Runtimes[0] != 0 {
		t.Errorf("Read(JobRuntime -100) = %+v, %v; want one runtime of 0", c, err)
	}
	for send, want := range map[string]string{"-9": `Send "-9" must be at least 0`, "99999999999999999999": `Send "99999999999999999999" is out of range`} {
		if _, err := Read(strings.NewReader(row("1.000", send)), 10); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(Send %s) error = %v, want %q", send, err, want)
		}
	}
}

// cutLog returns a job log of two whole rows (at 0s and 0.5s, cost 1)
// that ends in tail, cut short, padded with blank lines so that the file
// ends on a page boundary when page is set.
func cutLog(tail string, page bool) string {
	log := joblog.Header + "\n" +
		"1\t:\t1700000000.000000\t     0.100\t1\t0\t0\t0\techo 1\n" +
		"2\t:\t1700000000.500000\t     0.100\t1\t0\t0\t0\techo 2\n"
	if page {
		log += strings.Repeat("\n", (4096-(len(log)+len(tail))%4096)%4096)
	}
	return log + tail
}

// TestReadCutShort: the last row, cut short by a killed pace, is read for
// what it holds whole: a call at its Starttime, its runtime, whether it
// failed.
func TestReadCutShort(t *testing.T) {
	for _, tt := range []struct {
		name     string
		tail     string
		page     bool
		calls    int
		runtimes int
		failed   int
	}{
		{"cut in its Seq", "3", false, 2, 2, 0},
		{"cut in its Starttime", "3\t:\t1700000000.7", false, 2, 2, 0},
		{"cut after its Starttime", "3\t:\t1700000000.700000\t", false, 3, 2, 0},
		{"cut after its JobRuntime", "3\t:\t1700000000.700000\t     0.100\t", false, 3, 3, 0},
		{"cut in its Signal, Exitval 1", "3\t:\t1700000000.700000\t     0.100\t1\t0\t1\t", false, 3, 3, 0},
		{"cut in its Command, failed", "3\t:\t1700000000.700000\t     0.100\t1\t0\t1\t0\techo", true, 3, 3, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := cutLog(tt.tail, tt.page)
			c, err := Read(strings.NewReader(log), 10)
			if err != nil {
				t.Fatalf("Read = %v, want the rows and %q cut short", err, tt.tail)
			}
			if line := strings.Count(log, "\n") + 1; c.CutShort == nil || c.CutShort.Text != tt.tail || c.CutShort.Line != line {
				t.Errorf("CutShort = %+v, want line %d %q", c.CutShort, line, tt.tail)
			}
			if len(c.Times) != tt.calls || len(c.Seqs) != tt.calls || len(c.Runtimes) != tt.runtimes || c.Failed != tt.failed {
				t.Errorf("Read = %d calls, %d seqs, %d runtimes, %d failed; want %d, %d, %d, %d",
					len(c.Times), len(c.Seqs), len(c.Runtimes), c.Failed, tt.calls, tt.calls, tt.runtimes, tt.failed)
			}
			if tt.calls == 3 && (!c.Times[2].At.Equal(time.Unix(1700000000, 7e8)) || c.Seqs[2] != 3) {
				t.Errorf("the cut row's call = %v, seq %d; want 1700000000.7, seq 3", c.Times[2].At, c.Seqs[2])
			}
		})
	}

	// A whole row at the end, without its line break and not on a page
	// boundary, is a row like any other; one cut anywhere but at the end
	// is an error, quoted.
	c, err := Read(strings.NewReader(cutLog("3\t:\t1700000000.700000\t     0.100\t1\t0\t0\t0\techo", false)), 10)
	if err != nil || c.CutShort != nil || len(c.Times) != 3 {
		t.Errorf("Read(a whole last row without its line break) = %+v, %v; want 3 calls, none cut short", c, err)
	}
	_, err = Read(strings.NewReader(cutLog("3\t:\t17000\n4\t:\t1700000000.900000\t     0.100\t1\t0\t0\t0\techo 4\n", false)), 10)
	if want := `job log line 4: got 3 tab-separated fields, want 9: Seq Host Starttime JobRuntime Send Receive Exitval Signal Command: "3\t:\t17000"`; err == nil || err.Error() != want {
		t.Errorf("Read(a row cut short mid-file) = %v, want %s", err, want)
	}
}

// TestNewCutShort: a rule is proven kept despite a call cut short only if
// that call could not have broken it: placed at its Starttime, it counts
// as any call; without one, it may have come at any time, so the rule
// needs room for one more call in every window; without its Send, a cost
// rule cannot be proven.
func TestNewCutShort(t *testing.T) {
	rules := func(s string) []throttle.Rule {
		rs, err := throttle.ParseRules(s)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	for _, tt := range []struct {
		name     string
		tail     string
		rules    string
		broken   string // the rules broken, as "5/s,..."
		unproven string // the rules unproven
	}{
		{"placed, kept", "3\t:\t1700000000.700000\t", "3/s", "", ""},
		{"placed, broken by it", "3\t:\t1700000000.700000\t", "2/s", "2/s", ""},
		{"placed, cost unknown, a cost rule", "3\t:\t1700000000.700000\t     0.1\t", "3/s,cost:10/s", "", "cost:10/s"},
		{"placed, cost held", "3\t:\t1700000000.700000\t     0.1\t7\t", "3/s,cost:9/s", "", ""},
		{"placed, cost held, over a cost rule", "3\t:\t1700000000.700000\t     0.1\t8\t", "cost:9/s", "cost:9/s", ""},
		{"unplaced, room in every window", "3\t:\t17000", "3/s,3/2s", "", ""},
		{"unplaced, one rule full", "3\t:\t17000", "3/s,2/2s", "", "2/2s"},
		{"unplaced, a cost rule", "3", "10/s,cost:100/s", "", "cost:100/s"},
		{"unplaced, a rule broken by the whole rows", "3\t:\t17000", "1/s,2/s", "1/s", "2/s"},
	} {
		// The same when a run has replaced the row cut short by a row that
		// stands in for it: an audit says the same of the log after.
		for _, standIn := range []bool{false, true} {
			name := tt.name
			log := cutLog(tt.tail, false)
			if standIn {
				name += ", stood in for"
				log = standInLog(t, tt.tail)
			}
			t.Run(name, func(t *testing.T) {
				c, err := Read(strings.NewReader(log), 10)
				if err != nil {
					t.Fatal(err)
				}
				rep := New(rules(tt.rules), 0, c)
				var broken, unproven []string
				for _, r := range rep.Rules {
					if r.Violations > 0 {
						broken = append(broken, r.Rule.String())
					}
					if r.Unproven {
						unproven = append(unproven, r.Rule.String())
					}
				}
				b, u := strings.Join(broken, ","), strings.Join(unproven, ",")
				if b != tt.broken || u != tt.unproven || rep.OK != (b == "" && u == "") || rep.Broken() != (b != "") {
					t.Errorf("New(%s) = broken %q, unproven %q, OK %v, Broken() %v; want broken %q, unproven %q",
						tt.rules, b, u, rep.OK, rep.Broken(), tt.broken, tt.unproven)
				}
				if standIn {
					if len(rep.StandIns) != 1 || rep.StandIns[0].Text != tt.tail || rep.CutNote() != "" {
						t.Errorf("StandIns = %+v, CutNote() = %q; want the row stood in for, no row cut short", rep.StandIns, rep.CutNote())
					}
					return
				}
				if note := rep.CutNote(); !strings.Contains(note, "the last row is incomplete (pace was stopped while writing it): "+strconv.Quote(tt.tail)) ||
					(u != "") != strings.Contains(note, "no verdict") {
					t.Errorf("CutNote() = %q; want the row quoted, and no verdict when a rule is unproven", note)
				}
			})
		}
	}
}

// standInLog returns cutLog(tail) with tail, a row cut short, replaced by
// the row that stands in for it (joblog.Partial.StandIn), as a run that
// opens the log writes it, found at 1700000001.
func standInLog(t *testing.T, tail string) string {
	t.Helper()
	log, err := joblog.Read(strings.NewReader(cutLog(tail, false)))
	if err != nil || log.CutShort == nil {
		t.Fatalf("Read(%q) = %+v, %v; want it cut short", tail, log, err)
	}
	row := joblog.AppendEntry(nil, log.CutShort.StandIn(time.Unix(1700000001, 0)))
	return strings.TrimSuffix(cutLog(tail, false), tail) + string(row)
}

// TestStandIns: rows standing in for rows cut short are read for what
// the rows held, and the calls of all those without a Starttime may have
// come in one window: a rule needs room for as many more calls.
func TestStandIns(t *testing.T) {
	log := strings.TrimSuffix(standInLog(t, "3\t:\t17"), "\n") + "\n" +
		strings.TrimPrefix(standInLog(t, "4\t:\t1700000000.700000\t     0.100\t"), cutLog("", false))
	c, err := Read(strings.NewReader(log+"5\t:\t1"), 10)
	if err != nil || len(c.StandIns) != 2 || c.CutShort == nil || len(c.Times) != 3 || len(c.Runtimes) != 3 || c.Failed != 0 {
		t.Fatalf("Read = %+v, %v; want 3 calls and runtimes (the whole rows and 4), 2 stand-ins, 5 cut short, none failed", c, err)
	}
	for _, tt := range []struct {
		rules    string
		unproven string
		text     string // the report's line on them, and its UNPROVEN line
	}{
		// Peak 3 (1, 2 and 4 within a second); 3 and 5 may be in it too.
		{"5/s", "", "2 rows standing in for rows cut short (Exitval -2): 1 counted at its Starttime; 1 with no Starttime: not counted, time unknown\n"},
		{"4/s", "4/s", "UNPROVEN: 4/s (rows cut short, or standing in for rows cut short (Exitval -2), lack their Starttime: their calls may have broken it)\n"},
		{"cost:100/s", "cost:100/s", "1 counted at its Starttime, 1 of unknown cost (Send); 1 with no Starttime"},
	} {
		rs, _ := throttle.ParseRules(tt.rules)
		rep := New(rs, 0, c)
		var b strings.Builder
		rep.WriteText(&b)
		if rep.Rules[0].Unproven != (tt.unproven != "") || !strings.Contains(b.String(), tt.text) {
			t.Errorf("%s: unproven %v, report\n%s\nwant unproven %q and %q", tt.rules, rep.Rules[0].Unproven, b.String(), tt.unproven, tt.text)
		}
		b.Reset()
		rep.WriteJSON(&b)
		if want := `"stand_ins":[{"seq":3,"row":"3\t:\t17","counted":false},{"seq":4,"row":"4\t:\t1700000000.700000\t     0.100\t","counted":true}]}`; !strings.Contains(b.String(), want) {
			t.Errorf("%s: JSON %s, want %s", tt.rules, b.String(), want)
		}
	}
}

// A hop row (a redirect followed, a request sent again) is a call but no
// job: the median job runtime, which the fastest schedule gives each
// call, leaves its runtime out (its job's own row spans it).
func TestReadHopRowsHaveNoRuntime(t *testing.T) {
	log := joblog.Header + "\n" +
		"1\t:\t1700000000.000000\t     0.010\t0\t0\t-3\t0\t# redirect followed: GET http://a.example/1\n" +
		"1\t:\t1700000000.000000\t     1.000\t0\t0\t0\t0\tGET http://a.example/0\n" +
		"2\t:\t1700000001.000000\t     0.010\t0\t0\t-3\t0\t# sent again: GET http://a.example/2\n" +
		"2\t:\t1700000001.000000\t     0.010\t0\t0\t-3\t0\t# redirect followed: GET http://a.example/3\n" +
		"2\t:\t1700000001.000000\t     3.000\t0\t0\t0\t0\tGET http://a.example/1\n"
	c, err := Read(strings.NewReader(log), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Times) != 5 || len(c.Runtimes) != 2 || c.Failed != 0 {
		t.Fatalf("Read = %d calls, runtimes %v, %d failed; want 5 calls, the 2 jobs' runtimes, 0 failed", len(c.Times), c.Runtimes, c.Failed)
	}
	if rep := New(nil, 1, c); rep.MedianRuntime != 2*time.Second {
		t.Errorf("MedianRuntime = %v, want 2s (of the jobs 1s and 3s, not of their hops)", rep.MedianRuntime)
	}
}
