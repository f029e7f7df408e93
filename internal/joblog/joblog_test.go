package joblog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

var jobT0 = time.Unix(1700000000, 123456000)

func TestAppendEntry(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
		want string
	}{
		{"a plain job",
			Entry{Seq: 1, Host: ":", Start: jobT0, Runtime: 1250 * time.Millisecond, Command: "echo a"},
			"1\t:\t1700000000.123456\t     1.250\t0\t0\t0\t0\techo a\n"},
		{"empty host is the local machine; start rounds to the microsecond",
			Entry{Seq: 2, Start: jobT0.Add(500), Runtime: 4 * time.Millisecond, Receive: 2, Command: "GET http://x/"},
			"2\t:\t1700000000.123457\t     0.004\t0\t2\t0\t0\tGET http://x/\n"},
		{"a killed job; runtime rounds to the millisecond",
			Entry{Seq: 10, Host: ":", Start: jobT0, Runtime: 3718499 * time.Microsecond, Exit: -1, Signal: 15, Command: "sleep 10"},
			"10\t:\t1700000000.123456\t     3.718\t0\t0\t-1\t15\tsleep 10\n"},
		{"long runtimes widen the field",
			Entry{Seq: 3, Host: ":", Start: jobT0, Runtime: 123456789 * time.Millisecond, Command: "x"},
			"3\t:\t1700000000.123456\t123456.789\t0\t0\t0\t0\tx\n"},
		{"negative runtime after a clock step",
			Entry{Seq: 4, Host: ":", Start: jobT0, Runtime: -500 * time.Millisecond, Command: "x"},
			"4\t:\t1700000000.123456\t    -0.500\t0\t0\t0\t0\tx\n"},
		{"tabs in the command are kept; newlines become spaces",
			Entry{Seq: 5, Host: "a\tb", Start: jobT0, Command: "echo \"x\ty\"\nls\r"},
			"5\ta b\t1700000000.123456\t     0.000\t0\t0\t0\t0\techo \"x\ty\" ls\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendEntry(nil, tt.e)); got != tt.want {
				t.Errorf("AppendEntry(%+v) =\n%q, want\n%q", tt.e, got, tt.want)
			}
		})
	}
}

func TestReadGNUParallelJobLog(t *testing.T) {
	// Made with GNU parallel 20221122:
	// parallel --joblog FILE -j2 --timeout 3 {} ::: 'echo a' 'echo b' 'echo c' \
	//     'sh -c "exit 3"' 'sleep 10' $'echo "x\ty"'
	f, err := os.Open(filepath.Join("testdata", "joblog", "gnu-parallel.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := readEntries(f)
	if err != nil {
		t.Fatalf("readEntries(gnu-parallel.log) error: %v", err)
	}
	type row struct {
		seq, exit, signal int
		receive           int64
		cmd               string
	}
	want := []row{
		{1, 0, 0, 2, "echo a"},
		{2, 0, 0, 2, "echo b"},
		{3, 0, 0, 2, "echo c"},
		{4, 3, 0, 0, `sh -c "exit 3"`},
		{6, 0, 0, 4, "echo \"x\ty\""}, // a tab inside the command
		{5, -1, 15, 0, "sleep 10"},    // killed by --timeout
	}
	if len(got) != len(want) {
		t.Fatalf("readEntries(gnu-parallel.log) = %d rows, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Seq != w.seq || g.Exit != w.exit || g.Signal != w.signal || g.Receive != w.receive || g.Command != w.cmd || g.Host != ":" {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	if s := got[0].Start; !s.Equal(time.Unix(1796212462, 271000000)) {
		t.Errorf("row 0 Start = %v (%d), want 1796212462.271", s, s.UnixNano())
	}
	if r := got[5].Runtime; r != 3718*time.Millisecond {
		t.Errorf("row 5 Runtime = %v, want 3.718s", r)
	}
}

func TestReadJobLogTolerance(t *testing.T) {
	in := "\n" + Header + "\r\n" +
		"1\t\t1700000000\t1\t0\t0\t0\t0\t\r\n" + // CRLF, empty host, no fraction, empty command
		"  \n" +
		Header + "\n" + // concatenated logs
		" 2 \t:\t 1700000000.5 \t  0.5\t0\t0\t0\t0\ta\tb\tc" // no final newline
	got, err := readEntries(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ReadJobLog error: %v", err)
	}
	want := []Entry{
		{Seq: 1, Host: ":", Start: time.Unix(1700000000, 0), Runtime: time.Second},
		{Seq: 2, Host: ":", Start: time.Unix(1700000000, 5e8), Runtime: 500 * time.Millisecond, Command: "a\tb\tc"},
	}
	if !entriesEqual(got, want) {
		t.Errorf("ReadJobLog =\n%+v, want\n%+v", got, want)
	}
}

func TestReadJobLogErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		wantMsg  string
	}{
		{"too few fields", Header + "\n1\t:\t1700000000.0\t1.0\n", 2, "got 4 tab-separated fields, want 9"},
		{"bad seq", "x\t:\t1\t1\t0\t0\t0\t0\tc\n", 1, `Seq "x" is not an integer`},
		{"seq 0", "0\t:\t1\t1\t0\t0\t0\t0\tc\n", 1, `Seq "0" must be at least 1`},
		{"negative seq", Header + "\n1\t:\t1\t1\t0\t0\t0\t0\tc\n-1\t:\t1\t1\t0\t0\t0\t0\tc\n", 3, `Seq "-1" must be at least 1`},
		{"float exponent", "1\t:\t1.7e9\t1\t0\t0\t0\t0\tc\n", 1, `Starttime "1.7e9" is not epoch seconds`},
		{"year 10000", "1\t:\t253402300800\t1\t0\t0\t0\t0\tc\n", 1, `Starttime "253402300800" is not epoch seconds`},
		{"bad runtime", "1\t:\t1\tNaN\t0\t0\t0\t0\tc\n", 1, `JobRuntime "NaN" is not seconds`},
		{"bad exit", "\n\n1\t:\t1\t1\t0\t0\tok\t0\tc\n", 3, `Exitval "ok" is not an integer`},
		{"bad signal", "1\t:\t1\t1\t0\t0\t0\tTERM\tc\n", 1, `Signal "TERM" is not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readEntries(strings.NewReader(tt.in))
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("readEntries(%q) error = %v, want a *LineError wrapping ErrSyntax", tt.in, err)
			}
			if le.Line != tt.line || le.Kind != "job log" || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("readEntries(%q) error = %q (line %d), want line %d and %q", tt.in, err, le.Line, tt.line, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), strconv.Quote(le.Text)) {
				t.Errorf("error %q does not quote the line", err)
			}
		})
	}
}

func TestJobLogWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e := Entry{Seq: i + 1, Host: ":", Start: jobT0.Add(time.Duration(i) * time.Second), Command: strings.Repeat("x", 1000)}
			if err := w.Write(e); err != nil {
				t.Errorf("Write(seq %d) error: %v", i+1, err)
			}
		})
	}
	wg.Wait()

	// Rows are on disk before Close: a killed pace keeps them.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), Header+"\n") || strings.Count(string(data), Header) != 1 {
		t.Errorf("job log does not start with exactly one header:\n%.200s", data)
	}
	got, err := readEntries(bytes.NewReader(data))
	if err != nil || len(got) != n {
		t.Fatalf("readEntries(written log) = %d rows, %v; want %d rows", len(got), err, n)
	}
	seen := make(map[int]bool)
	for _, e := range got {
		seen[e.Seq] = true
	}
	if len(seen) != n {
		t.Errorf("written log holds %d distinct Seq values, want %d", len(seen), n)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close error: %v", err)
	}

	// Reopening appends without a second header, after cutting off a
	// row a killed writer left cut short (TestCutShortRow has more).
	before := string(data)
	if err := os.WriteFile(path, append(data, "51\t:\t17"...), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Entry{Seq: 52, Start: jobT0, Command: "y"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ = os.ReadFile(path)
	if strings.Count(string(data), Header) != 1 {
		t.Errorf("reopened job log has %d headers, want 1", strings.Count(string(data), Header))
	}
	stand, _ := w.StandIn()
	if !strings.HasPrefix(string(data), before+"51\t:\t") || string(data) != before+string(AppendEntry(nil, stand))+"52\t:\t1700000000.123456\t     0.000\t0\t0\t0\t0\ty\n" {
		t.Errorf("reopened job log ends with %q, want the row cut short replaced by its stand-in and row 52 after the rows before it", data[len(data)-160:])
	}
}

func TestOpenJobLogError(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing-dir", "jobs.log"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing dir) error = %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestReadTimestamps(t *testing.T) {
	in := "1700000000\n\n  1700000000.25  \n2023-11-14T22:13:20Z\r\n2023-11-14T23:13:20.5+01:00\n1700000000.0000000019\n"
	got, err := ReadTimestamps(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ReadTimestamps error: %v", err)
	}
	want := []time.Time{
		time.Unix(1700000000, 0), time.Unix(1700000000, 25e7),
		time.Unix(1700000000, 0), time.Unix(1700000000, 5e8), time.Unix(1700000000, 1),
	}
	if len(got) != len(want) {
		t.Fatalf("ReadTimestamps = %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("ReadTimestamps line %d = %v, want %v", i, got[i], want[i])
		}
	}

	_, err = ReadTimestamps(strings.NewReader("1700000000\nyesterday\n"))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || le.Kind != "timestamps" || !strings.Contains(err.Error(), `"yesterday"`) {
		t.Errorf(`ReadTimestamps("...yesterday") error = %v, want a *LineError for line 2 quoting it`, err)
	}
}

func TestJobLogRoundTrip(t *testing.T) {
	entries := []Entry{
		{Seq: 1, Host: ":", Start: jobT0, Runtime: 1250 * time.Millisecond, Send: 7, Receive: 1 << 40, Command: "echo a"},
		{Seq: 2, Host: "4/user@host", Start: time.Unix(0, 0), Runtime: -time.Millisecond, Exit: -1, Signal: 9, Command: "GET http://127.0.0.1/\tx"},
		{Seq: 3, Host: ":", Start: time.Unix(253402300799, 999999000), Runtime: 9e9 * time.Second, Exit: 255},
	}
	var buf []byte
	buf = append(buf, Header+"\n"...)
	for _, e := range entries {
		buf = AppendEntry(buf, e)
	}
	got, err := readEntries(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("ReadJobLog error: %v\n%s", err, buf)
	}
	if !entriesEqual(got, entries) {
		t.Errorf("readEntries(write(entries)) =\n%+v, want\n%+v", got, entries)
	}
}

func FuzzRead(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "joblog", "gnu-parallel.log")); err == nil {
		f.Add(string(data))
	}
	f.Add(Header + "\n1\t:\t1700000000.123456\t     1.250\t0\t0\t-1\t15\techo a\n")
	f.Add("1\t\t-5.0000005\t-0.0005\t+3\t-0\t007\t0\ta\r\r\n\n2\t:\t1.\t1\t0\t0\t0\t0\t\tb\r")
	f.Add("Seq\tHost\tx\n")
	// Rows standing in for rows cut short: in its Seq, and after its Send.
	f.Add(Header + "\n0\t:\t1800000000.000000\t     0.000\t0\t0\t-2\t0\t# row cut short (a pace killed as it wrote it): \"1\"\n")
	f.Add(Header + "\n3\t:\t1700000000.5\t     0.1\t7\t0\t-2\t5\t# x\n0\t:\t1\t0\t0\t0\t-2\t1\tx\n")
	// Rows cut short at their end, as a killed pace leaves them, and in
	// the middle, where no killed pace leaves them.
	for _, tail := range []string{"2", "2\t:\t17000", "2\t:\t1700000000.5\t     0.1\t", "2\t:\tnoon", "2\t:\t17000\n3\t:\t1\t0\t0\t0\t0\t0\tx\n"} {
		f.Add(Header + "\n1\t:\t1700000000.123456\t     1.250\t0\t0\t0\t0\techo a\n" + tail)
	}
	f.Fuzz(func(t *testing.T, in string) {
		entries, err := readEntries(strings.NewReader(in))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("readEntries(%q) error %v is not a *LineError", in, err)
			}
			return
		}
		var buf []byte
		for _, e := range entries {
			buf = AppendEntry(buf, e)
		}
		again, err := readEntries(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("readEntries(write(read(%q))) error: %v\nwritten:\n%q", in, err, buf)
		}
		if !entriesEqual(again, entries) {
			t.Fatalf("round trip of %q:\nread:  %+v\nagain: %+v", in, entries, again)
		}
	})
}

// entriesEqual compares entries, comparing Start with time.Time.Equal.
func entriesEqual(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.Start.Equal(y.Start) {
			return false
		}
		x.Start, y.Start = time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}

// readEntries returns the rows of the job log in r.
func readEntries(r io.Reader) ([]Entry, error) {
	log, err := Read(r)
	if err != nil {
		return nil, err
	}
	return log.Entries, nil
}

func TestHeaderRules(t *testing.T) {
	rules, _ := throttle.ParseRules("5/s,12/3s,cost:100/s")
	path := filepath.Join(t.TempDir(), "run.log")
	w, err := Open(path, rules)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(Entry{Seq: 1, Start: time.Unix(1700000000, 0), Send: 7, Command: "echo 1"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	wantHeader := Header + " (pace rules: 5/s,12/3s,cost:100/s)\n"
	if !strings.HasPrefix(string(data), wantHeader) {
		t.Fatalf("job log starts %q, want %q", data, wantHeader)
	}
	log, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if throttle.FormatRules(log.Rules) != "5/s,12/3s,cost:100/s" || len(log.Entries) != 1 || log.Entries[0].Cost() != 7 {
		t.Errorf("Read = rules %v, entries %+v", log.Rules, log.Entries)
	}
	// GNU parallel's header names no rules; a header that names bad ones
	// (a newer pace's) is read, its error kept for a reader that takes
	// its rules from it: rules given win.
	if log, err := Read(strings.NewReader(Header + "\n")); err != nil || log.Rules != nil {
		t.Errorf("Read(parallel's header) = %v, %v; want no rules", log.Rules, err)
	}
	log, err = Read(strings.NewReader(Header + " (pace rules: 5/x)\n1\t:\t1700000000\t0.1\t0\t0\t0\t0\techo 1\n"))
	if err != nil || len(log.Entries) != 1 {
		t.Fatalf("Read(bad rules in header) = %+v, %v; want its row", log, err)
	}
	if _, err := log.RulesOr(nil); err == nil || !strings.Contains(err.Error(), `"5/x"`) {
		t.Errorf("RulesOr(nil) of bad rules in header = %v, want an error quoting them", err)
	}
	if given, _ := throttle.ParseRules("2/s"); true {
		if rules, err := log.RulesOr(given); err != nil || throttle.FormatRules(rules) != "2/s" {
			t.Errorf("RulesOr(2/s) of bad rules in header = %v, %v; want 2/s", rules, err)
		}
	}
}

// A line longer than MaxLine (garbage such as /dev/zero) is an error, not
// unbounded memory.
func TestReadLongLine(t *testing.T) {
	r := io.LimitReader(zeros{}, MaxLine+10)
	_, err := Read(r)
	var le *LineError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "longer than 4 MiB") {
		t.Errorf("Read(a 4 MiB line) = %v, want a LineError about its length", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// On a full disk the rows that do not fit are cut off again: the log stays
// well-formed, an attempt's rows (a hop's and its own, in one write) are
// there together or not at all, and every later row is refused.
func TestWriterFullDisk(t *testing.T) {
	dir := smallTmpfs(t, "16k")
	path := filepath.Join(dir, "j.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 300)
	var written int
	var werr error
	for i := 1; i <= 1000; i++ {
		hop := Entry{Seq: i, Start: time.Unix(1700000000, 0), Exit: ExitHop, Command: "# redirect followed: GET " + long}
		if werr = w.Write(hop, Entry{Seq: i, Start: time.Unix(1700000000, 0), Command: "echo " + long}); werr != nil {
			break
		}
		written += 2
	}
	if !errors.Is(werr, ErrWriteFailed) || !strings.Contains(werr.Error(), path) {
		t.Fatalf("Write on a full disk = %v, want ErrWriteFailed naming %s", werr, path)
	}
	if err := w.Write(Entry{Seq: 9999, Command: "later"}); !errors.Is(err, ErrWriteFailed) {
		t.Errorf("Write after a failure = %v, want ErrWriteFailed", err)
	}
	w.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("job log ends in a torn row: ...%q", data[max(0, len(data)-40):])
	}
	got, err := readEntries(bytes.NewReader(data))
	if err != nil || len(got) != written {
		t.Errorf("job log holds %d rows (%v), want the %d written", len(got), err, written)
	}
}

// smallTmpfs mounts a tmpfs of the given size for the test, or skips it
// where that takes privileges the test does not have.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("a full disk is simulated with a small tmpfs, which needs root on Linux")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s): run as root on Linux to test a full disk", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// Two writers on one log (two pace runs, each with its own descriptor)
// lose no row and splice none, whatever the rows' lengths.
func TestWritersShareALog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.log")
	const perWriter = 200
	var wg sync.WaitGroup
	for wi := range 2 {
		w, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Close()
			for i := range perWriter {
				cmd := fmt.Sprintf("w%d %s", wi, strings.Repeat("x", (i*37+wi*11)%500))
				if err := w.Write(Entry{Seq: i + 1, Start: jobT0, Command: cmd}); err != nil {
					t.Errorf("writer %d: Write(seq %d) error: %v", wi, i+1, err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), Header); n != 1 {
		t.Errorf("shared job log has %d headers, want 1", n)
	}
	got, err := readEntries(bytes.NewReader(data))
	if err != nil || len(got) != 2*perWriter {
		t.Fatalf("readEntries(shared log) = %d rows, %v; want %d rows", len(got), err, 2*perWriter)
	}
	for _, e := range got {
		wi := strings.Index("w0 w1 ", e.Command[:min(3, len(e.Command))]) / 3
		if want := fmt.Sprintf("w%d %s", wi, strings.Repeat("x", ((e.Seq-1)*37+wi*11)%500)); wi < 0 || e.Command != want {
			t.Errorf("row %d has command %.60q, want %.60q", e.Seq, e.Command, want)
		}
	}
}

// A log cut to nothing under a run (logrotate's copytruncate) goes on
// from its new end: no hole of NULs, and the rows after the cut read back.
func TestWriterLogTruncatedUnderIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rot.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 1; i <= 3; i++ {
		if err := w.Write(Entry{Seq: i, Start: jobT0, Command: "before"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	for i := 4; i <= 5; i++ {
		if err := w.Write(Entry{Seq: i, Start: jobT0, Command: "after"}); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		t.Fatalf("truncated job log holds NUL bytes: %q", data[:min(len(data), 80)])
	}
	got, err := readEntries(bytes.NewReader(data))
	if err != nil || len(got) != 2 || got[0].Seq != 4 || got[1].Seq != 5 {
		t.Errorf("readEntries(truncated log) = %+v, %v; want rows 4 and 5", got, err)
	}
}

// On a full disk shared by two writers each cuts off only its own torn
// row: the log stays well-formed and holds every row either wrote.
func TestWritersShareAFullDisk(t *testing.T) {
	dir := smallTmpfs(t, "16k")
	path := filepath.Join(dir, "j.log")
	var written [2]int
	var wg sync.WaitGroup
	for wi := range 2 {
		w, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Close()
			for i := 1; i <= 1000; i++ {
				cmd := fmt.Sprintf("w%d %s", wi, strings.Repeat("x", 100+(i*37)%300))
				if err := w.Write(Entry{Seq: i, Start: jobT0, Command: cmd}); err != nil {
					if !errors.Is(err, ErrWriteFailed) {
						t.Errorf("writer %d: Write error = %v, want ErrWriteFailed", wi, err)
					}
					return
				}
				written[wi]++
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("job log ends in a torn row: ...%q", data[max(0, len(data)-40):])
	}
	got, err := readEntries(bytes.NewReader(data))
	if err != nil || len(got) != written[0]+written[1] {
		t.Errorf("job log holds %d rows (%v), want the %d+%d written", len(got), err, written[0], written[1])
	}
}

// BenchmarkWriterWrite measures one row appended under the file lock.
func BenchmarkWriterWrite(b *testing.B) {
	w, err := Open(filepath.Join(b.TempDir(), "j.log"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	e := Entry{Seq: 1, Start: jobT0, Runtime: time.Second, Command: "echo " + strings.Repeat("x", 40)}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLogCallsWithin(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l := &Log{Entries: []Entry{{Start: now.Add(-2 * time.Hour)}, {Start: now.Add(-time.Minute), Send: 3}, {Start: now.Add(-time.Second)}}}
	calls := l.Calls()
	if len(calls) != 3 || !calls[1].At.Equal(now.Add(-time.Minute)) {
		t.Errorf("Calls = %v, want the 3 rows' admissions", calls)
	}
	hour, sec := []throttle.Rule{{N: 5, Window: time.Hour}}, []throttle.Rule{{N: 5, Window: 2 * time.Second}}
	if n := l.Within(append(sec, hour...), now); n != 2 {
		t.Errorf("Within(1h, 2s) = %d, want 2: the longest window decides", n)
	}
	if n := l.Within(sec, now); n != 1 {
		t.Errorf("Within(2s) = %d, want 1", n)
	}
}

// TestCutShortRow: a pace killed outright as it wrote a row that crossed a
// page boundary of the file leaves the row's start (the kernel copies a
// write a page at a time, and SIGKILL stops it between two), and the
// file then ends on a page boundary. Read leaves that row out (CutShort)
// and Open cuts it off, so that the log stays one that --resume accepts:
// the line break Open used to add made it a malformed row, or a row with
// a command cut short, which every later resume refused. Whatever else a
// log ends in without a line break is as it was.
func TestCutShortRow(t *testing.T) {
	row1 := "1\t:\t1700000000.000000\t     0.100\t0\t0\t0\t0\techo "
	tests := []struct {
		name     string
		tail     string
		pageEnd  bool // the file ends on a page boundary
		cutShort bool
	}{
		{"cut in its Seq", "1", false, true},
		{"cut after its Seq", "12\t", false, true},
		{"cut in its Starttime", "12\t:\t17000", false, true},
		{"cut in its Signal", "12\t:\t1700000000.5\t0.1\t0\t0\t0\t", false, true},
		{"cut in its Command, at a page boundary", "12\t:\t1700000000.5\t0.1\t0\t0\t0\t0\techo ab", true, true},
		{"whole but for its line break", "12\t:\t1700000000.5\t0.1\t0\t0\t0\t0\techo ab", false, false},
		{"a note", "# resumed by hand", false, false},
		{"a field that is not a row's", "12\t:\tnoon\t0", false, false},
		{"cut in a field that is not a row's", "12\t:\tnoon", false, false},
		{"cut in its JobRuntime, padded", "12\t:\t1700000000.5\t     0.", false, true},
		{"cut in its Host", "12\t4/user@ho", false, true},
		{"not a Seq", "x", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := Header + "\n" + row1
			size := len(head) + 1 + len(tt.tail) // the line break of row 1
			pad := 0
			if tt.pageEnd {
				pad = 4096 - size%4096
			} else if size%4096 == 0 {
				pad = 1
			}
			log := head + strings.Repeat("x", pad) + "\n" + tt.tail
			got, err := Read(strings.NewReader(log))
			cut := textOf(got.CutShort)
			switch {
			case tt.cutShort && (err != nil || len(got.Entries) != 1 || cut != tt.tail):
				t.Fatalf("Read = %d rows, cut short %q, %v; want row 1 and %q cut short", len(got.Entries), cut, err, tt.tail)
			case !tt.cutShort && err == nil && (len(got.Entries) != 2 || got.CutShort != nil):
				t.Fatalf("Read = %d rows, cut short %q; want 2 rows, none cut short (or an error)", len(got.Entries), cut)
			}
			if want := 12; tt.cutShort && strings.Contains(tt.tail, "\t") && (SeqOf(cut) != want || got.CutShort.Entry.Seq != want) {
				t.Errorf("SeqOf(%q) = %d, Entry.Seq %d; want %d", cut, SeqOf(cut), got.CutShort.Entry.Seq, want)
			} else if tt.cutShort && !strings.Contains(tt.tail, "\t") && (SeqOf(cut) != 0 || got.CutShort.Entry.Seq != 0) {
				t.Errorf("SeqOf(%q) = %d, Entry.Seq %d; want 0: its Seq is cut", cut, SeqOf(cut), got.CutShort.Entry.Seq)
			}
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			w, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			if err := w.Write(Entry{Seq: 2, Start: jobT0, Command: "echo b"}); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if cut := w.CutShort(); tt.cutShort && cut != tt.tail || !tt.cutShort && cut != "" {
				t.Errorf("Writer.CutShort() = %q, want it %q if cut short", cut, tt.tail)
			}
			// A row cut short is replaced by its stand-in, at the instant
			// Open found it if it lacks its Starttime.
			stand, replaced := w.StandIn()
			if replaced != tt.cutShort {
				t.Fatalf("Writer.StandIn() = %+v, %v; want a row in its place only if cut short", stand, replaced)
			}
			b, _ := os.ReadFile(path)
			want := log + "\n" + "2\t:\t1700000000.123456\t     0.000\t0\t0\t0\t0\techo b\n"
			if tt.cutShort {
				p := got.CutShort
				if !p.HasStart() && (stand.Start.Before(before) || stand.Start.After(after)) {
					t.Errorf("stand-in Starttime %v, want the instant Open found the row, between %v and %v", stand.Start, before, after)
				}
				if p.StandIn(stand.Start) != stand {
					t.Errorf("Writer.StandIn() = %+v, want %+v", stand, p.StandIn(stand.Start))
				}
				want = strings.TrimSuffix(log, tt.tail) + string(AppendEntry(nil, stand)) + "2\t:\t1700000000.123456\t     0.000\t0\t0\t0\t0\techo b\n"
			}
			if string(b) != want {
				t.Errorf("after Open and a row, the log ends %q, want %q", tail(string(b)), tail(want))
			}
			if tt.cutShort {
				if got, err := Read(bytes.NewReader(b)); err != nil || len(got.Entries) != 3 || got.CutShort != nil || !got.Entries[1].StandsIn() {
					t.Errorf("Read after = %d rows, cut short %q, %v; want rows 1, the stand-in and 2", len(got.Entries), textOf(got.CutShort), err)
				}
			}
		})
	}
}

// TestStandInForTheOnlyRow: a log that holds nothing but a row cut short
// (in its Seq: the stand-in has Seq 0) gets a header before its stand-in.
func TestStandInForTheOnlyRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	os.WriteFile(path, []byte("1"), 0o644)
	w, err := Open(path, []throttle.Rule{{N: 2, Window: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	stand, ok := w.StandIn()
	b, _ := os.ReadFile(path)
	if want := "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand (pace rules: 2/h)\n" + string(AppendEntry(nil, stand)); !ok || string(b) != want {
		t.Errorf("log = %q, want %q", b, want)
	}
	log, err := Read(bytes.NewReader(b))
	if err != nil || len(log.Entries) != 1 || log.Entries[0].Seq != 0 || !log.Entries[0].StandsIn() || log.Entries[0].Partial().Text != "1" {
		t.Errorf("Read = %+v, %v; want the stand-in, Seq 0, for \"1\"", log, err)
	}
}

// textOf returns the text of a row cut short, or "" for none.
func textOf(p *Partial) string {
	if p == nil {
		return ""
	}
	return p.Text
}

// tail returns the end of s, for messages.
func tail(s string) string { return s[max(0, len(s)-120):] }

// TestWriteLongCommandReadsBack: a row is never longer than Read takes. A
// command that holds its item several times ({} {} {} {} {} of a 1 MiB
// item, which exec refuses: argument list too long) got a row longer than
// MaxLine, and every later --resume, pace audit and run seeding its rules
// from the log refused the whole log.
func TestWriteLongCommandReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	item := strings.Repeat("x", 1<<20)
	long := "echo" + strings.Repeat(" "+item, 5)
	for i, c := range []string{"echo a", long, strings.Repeat("'", MaxLine), "echo b"} {
		if err := w.Write(Entry{Seq: i + 1, Start: time.Unix(1700000000, 0), Command: c}); err != nil {
			t.Fatalf("Write(row %d) = %v", i+1, err)
		}
	}
	w.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := Read(f)
	if err != nil {
		t.Fatalf("Read(a log with a %d-byte command) = %v, want its rows", len(long), err)
	}
	if len(l.Entries) != 4 || l.Entries[0].Command != "echo a" || l.Entries[3].Command != "echo b" {
		t.Fatalf("Read = %d rows, want 4 with the short commands whole", len(l.Entries))
	}
	for _, e := range l.Entries[1:3] {
		if len(e.Command) > MaxLine-100 || !strings.HasSuffix(e.Command, " bytes)") {
			t.Errorf("row %d: Command of %d bytes ending %q, want one cut to fit a row, saying so", e.Seq, len(e.Command), e.Command[max(0, len(e.Command)-40):])
		}
	}
	if got := l.Entries[1].Command; got != FitCommand(long) || !strings.HasPrefix(got, "echo xxx") {
		t.Errorf("row 2's Command is not FitCommand of the command written")
	}
}
