package joblog

import (
	"io"
	"strings"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Format is the kind of file Scan found.
type Format int

// The formats Scan tells apart.
const (
	// Timestamps: one call instant per line (see ReadTimestamps).
	Timestamps Format = iota
	// JobLog: pace's or GNU parallel's job log (see Read).
	JobLog
)

// Scanned is what Scan found besides the rows.
type Scanned struct {
	Format Format
	// Rules are the rules a job log's header names, or nil.
	Rules []throttle.Rule
	// RulesErr is the *LineError of a header that names rules this pace
	// cannot read (see Log.RulesErr); Rules is nil then.
	RulesErr error
	// CutShort is a job log's last line when it is a row that a pace
	// killed as it wrote it left cut short (see Log.CutShort), or nil.
	// It is not passed to row: what it holds may be short of a call.
	CutShort *Partial
}

// Scan reads a job log or a file of timestamps one line at a time and
// calls row with the format and each call it holds, keeping nothing itself: memory does
// not grow with the input, whatever its length (a line longer than
// MaxLine is a *LineError, as in Read). The first non-blank line decides
// the format: a line with a tab (past trailing blanks) is a job log's.
// A timestamp is passed as an Entry with only Seq (its position among the
// timestamps, from 1) and Start. It returns what it found, and the first
// error of reading, parsing or row. A job log's last line cut short, as
// a killed pace leaves it, is no error: Scanned.CutShort holds it. Any
// other malformed line is an error, one cut short anywhere but at the
// end of the file included: rows are written under a lock, whole, so
// only the last can be a killed writer's.
func Scan(r io.Reader, row func(f Format, e Entry) error) (Scanned, error) {
	var sc Scanned
	decided := false
	seq := 0
	cr := &countingReader{r: r}
	err := eachLine(cr, func(n int, line string, ended bool) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		if !decided {
			decided = true
			if strings.Contains(strings.TrimRight(line, " \t"), "\t") {
				sc.Format = JobLog
			}
		}
		if sc.Format == Timestamps {
			t, ok := parseTimestamp(line)
			if !ok {
				return &LineError{Kind: "timestamps", Line: n, Text: line, Msg: timestampWant}
			}
			seq++
			return row(sc.Format, Entry{Seq: seq, Start: t})
		}
		// Without a line break the line is the last: cr has read all.
		if !ended && cutShort(line, cr.n) {
			sc.CutShort = partialOf(n, line)
			return nil
		}
		if strings.HasPrefix(line, "Seq\tHost\t") {
			if sc.Rules == nil && sc.RulesErr == nil {
				sc.Rules, sc.RulesErr = lineRules(n, line)
			}
			return nil
		}
		e, msg := parseRow(line)
		if msg != "" {
			return &LineError{Kind: "job log", Line: n, Text: line, Msg: msg}
		}
		return row(sc.Format, e)
	})
	return sc, err
}

// timestampWant says what a line of timestamps must hold.
const timestampWant = "want epoch seconds such as 1700000000.25 or RFC 3339 such as 2023-11-14T22:13:20.25Z"

// parseTimestamp parses one line of a timestamp file, as ReadTimestamps
// does.
func parseTimestamp(line string) (time.Time, bool) {
	s := strings.TrimSpace(line)
	if sec, ns, ok := parseDecimal(s, maxEpoch); ok {
		return time.Unix(sec, ns), true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
