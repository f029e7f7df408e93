package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// JobLogHeader is the first line of a job log, as GNU parallel writes it.
const JobLogHeader = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand"

// JobLogEntry is one row of a job log in GNU parallel's --joblog format.
type JobLogEntry struct {
	Seq  int    // 1-based job number
	Host string // ":" for the local machine; "" is written as ":"
	// Start is the instant the job was admitted, kept to the microsecond.
	Start time.Time
	// Runtime is how long the job ran, kept to the millisecond.
	Runtime time.Duration
	// Send and Receive are byte counts of input sent and output received
	// (GNU parallel); 0 when not measured.
	Send, Receive int64
	// Exit is the exit status; -1 for a job that pace (or parallel) killed.
	Exit int
	// Signal is the number of the signal that ended the job, else 0.
	Signal int
	// Command is the command line; for fetch, "METHOD URL".
	Command string
}

// AppendJobLogEntry appends e to dst as one tab-separated row ending in a
// newline, formatted as GNU parallel does: Starttime as epoch seconds with
// 6 decimals, JobRuntime as %10.3f seconds. Newlines in Host or Command
// and tabs in Host become spaces, and trailing carriage returns are
// dropped from Command, so the row reads back as one row.
func AppendJobLogEntry(dst []byte, e JobLogEntry) []byte {
	host := e.Host
	if host == "" {
		host = ":"
	}
	host = strings.NewReplacer("\t", " ", "\n", " ").Replace(host)
	cmd := strings.TrimRight(strings.ReplaceAll(e.Command, "\n", " "), "\r")

	dst = strconv.AppendInt(dst, int64(e.Seq), 10)
	dst = append(dst, '\t')
	dst = append(dst, host...)
	dst = append(dst, '\t')
	dst = appendFixed(dst, e.Start.Round(time.Microsecond).UnixMicro(), 6)
	dst = append(dst, '\t')
	rt := appendFixed(nil, int64(e.Runtime.Round(time.Millisecond)/time.Millisecond), 3)
	dst = fmt.Appendf(dst, "%10s\t%d\t%d\t%d\t%d\t", rt, e.Send, e.Receive, e.Exit, e.Signal)
	dst = append(dst, cmd...)
	return append(dst, '\n')
}

// appendFixed appends v / 10^decimals with exactly that many decimals,
// using integer arithmetic so no float rounding creeps in.
func appendFixed(dst []byte, v int64, decimals int) []byte {
	unit := int64(1)
	for range decimals {
		unit *= 10
	}
	if v < 0 {
		dst = append(dst, '-')
	}
	whole, frac := v/unit, v%unit
	if v < 0 {
		whole, frac = -whole, -frac
	}
	return fmt.Appendf(dst, "%d.%0*d", whole, decimals, frac)
}

// JobLogWriter appends rows to a job log file. Each Write is a single
// write to the file, so a killed pace loses only the rows of jobs still
// running. A JobLogWriter is safe for concurrent use.
type JobLogWriter struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
}

// OpenJobLog opens the job log at path for appending, creating it if
// needed. It writes JobLogHeader when the file is empty, and a newline
// first when the file ends in a partial row.
func OpenJobLog(path string) (*JobLogWriter, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("runner: open job log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("runner: open job log: %w", err)
	}
	var prefix string
	if fi.Size() == 0 {
		prefix = JobLogHeader + "\n"
	} else {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
			f.Close()
			return nil, fmt.Errorf("runner: open job log: %w", err)
		}
		if last[0] != '\n' {
			prefix = "\n"
		}
	}
	if prefix != "" {
		if _, err := f.WriteString(prefix); err != nil {
			f.Close()
			return nil, fmt.Errorf("runner: write job log %s: %w", path, err)
		}
	}
	return &JobLogWriter{f: f}, nil
}

// Write appends e as one row; see AppendJobLogEntry.
func (w *JobLogWriter) Write(e JobLogEntry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = AppendJobLogEntry(w.buf[:0], e)
	if _, err := w.f.Write(w.buf); err != nil {
		return fmt.Errorf("runner: write job log: %w", err)
	}
	return nil
}

// Close closes the file.
func (w *JobLogWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("runner: close job log: %w", err)
	}
	return nil
}

// ErrSyntax is wrapped by the *LineError that ReadJobLog and
// ReadTimestamps return for malformed input.
var ErrSyntax = errors.New("malformed input")

// LineError reports a malformed line of a job log or timestamp file.
type LineError struct {
	Kind string // "job log" or "timestamps"
	Line int    // 1-based line number
	Text string // the line, without its line break
	Msg  string // what was wrong and what was expected
}

// Error formats e as "runner: KIND line N: MSG: QUOTED LINE", cutting the
// quoted line after 200 bytes.
func (e *LineError) Error() string {
	text := e.Text
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	return fmt.Sprintf("runner: %s line %d: %s: %q", e.Kind, e.Line, e.Msg, text)
}

// Unwrap returns ErrSyntax.
func (e *LineError) Unwrap() error { return ErrSyntax }

// ReadJobLog reads a job log written by pace or by GNU parallel --joblog.
// Header lines and blank lines are skipped, an empty Host becomes ":", and
// everything after the 8th tab is the Command (GNU parallel does not
// escape tabs in commands). Rows come back in file order, which need not
// be Seq order. Errors are *LineError values.
func ReadJobLog(r io.Reader) ([]JobLogEntry, error) {
	var entries []JobLogEntry
	err := eachLine(r, func(n int, line string) error {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "Seq\tHost\t") {
			return nil
		}
		e, msg := parseJobLogRow(line)
		if msg != "" {
			return &LineError{Kind: "job log", Line: n, Text: line, Msg: msg}
		}
		entries = append(entries, e)
		return nil
	})
	return entries, err
}

// parseJobLogRow parses one row; msg is non-empty when it is malformed.
func parseJobLogRow(line string) (e JobLogEntry, msg string) {
	f := strings.SplitN(line, "\t", 9)
	if len(f) < 9 {
		return e, fmt.Sprintf("got %d tab-separated fields, want 9: %s",
			len(f), strings.ReplaceAll(JobLogHeader, "\t", " "))
	}
	var err error
	bad := func(field, value, want string) string {
		return fmt.Sprintf("%s %q is not %s", field, value, want)
	}
	if e.Seq, err = strconv.Atoi(strings.TrimSpace(f[0])); err != nil {
		return e, bad("Seq", f[0], "an integer")
	}
	if e.Host = f[1]; e.Host == "" {
		e.Host = ":"
	}
	sec, ns, ok := parseDecimal(strings.TrimSpace(f[2]), maxEpoch)
	if !ok {
		return e, bad("Starttime", f[2], "epoch seconds such as 1700000000.123")
	}
	e.Start = time.Unix(sec, ns).Round(time.Microsecond)
	sec, ns, ok = parseDecimal(strings.TrimSpace(f[3]), maxRuntime)
	if !ok {
		return e, bad("JobRuntime", f[3], "seconds such as 1.250")
	}
	e.Runtime = (time.Duration(sec)*time.Second + time.Duration(ns)).Round(time.Millisecond)
	if e.Send, err = strconv.ParseInt(strings.TrimSpace(f[4]), 10, 64); err != nil {
		return e, bad("Send", f[4], "an integer")
	}
	if e.Receive, err = strconv.ParseInt(strings.TrimSpace(f[5]), 10, 64); err != nil {
		return e, bad("Receive", f[5], "an integer")
	}
	if e.Exit, err = strconv.Atoi(strings.TrimSpace(f[6])); err != nil {
		return e, bad("Exitval", f[6], "an integer")
	}
	if e.Signal, err = strconv.Atoi(strings.TrimSpace(f[7])); err != nil {
		return e, bad("Signal", f[7], "an integer")
	}
	e.Command = f[8]
	return e, ""
}

// ReadTimestamps reads call instants, one per line, for auditing: epoch
// seconds with an optional fraction (1700000000.25) or RFC 3339 with
// optional fractional seconds (2023-11-14T22:13:20.25Z). Surrounding
// spaces and blank lines are ignored. Errors are *LineError values.
func ReadTimestamps(r io.Reader) ([]time.Time, error) {
	var times []time.Time
	err := eachLine(r, func(n int, line string) error {
		s := strings.TrimSpace(line)
		if s == "" {
			return nil
		}
		if sec, ns, ok := parseDecimal(s, maxEpoch); ok {
			times = append(times, time.Unix(sec, ns))
			return nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return &LineError{Kind: "timestamps", Line: n, Text: line,
				Msg: "want epoch seconds such as 1700000000.25 or RFC 3339 such as 2023-11-14T22:13:20.25Z"}
		}
		times = append(times, t)
		return nil
	})
	return times, err
}

// eachLine calls fn with each line of r and its 1-based number, without
// the line break (trailing carriage returns are dropped too). Lines may be
// of any length.
func eachLine(r io.Reader, fn func(n int, line string) error) error {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if line != "" {
			if ferr := fn(n, strings.TrimRight(strings.TrimSuffix(line, "\n"), "\r")); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("runner: read line %d: %w", n, err)
		}
	}
}

const (
	maxEpoch   = 253402300799 // 9999-12-31T23:59:59Z, in seconds
	maxRuntime = 9e9          // seconds; keeps a Duration from overflowing
)

// parseDecimal parses "[-]digits[.digits]" into whole seconds and
// nanoseconds, both carrying the sign. Digits past the ninth decimal are
// dropped. It rejects magnitudes above maxSec seconds.
func parseDecimal(s string, maxSec int64) (sec, ns int64, ok bool) {
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 12 || !allDigits(whole) || !allDigits(frac) {
		return 0, 0, false
	}
	sec, _ = strconv.ParseInt(whole, 10, 64)
	if sec > maxSec {
		return 0, 0, false
	}
	frac = (frac + "000000000")[:9]
	ns, _ = strconv.ParseInt(frac, 10, 64)
	if neg {
		sec, ns = -sec, -ns
	}
	return sec, ns, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
