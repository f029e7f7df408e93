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

// Scan reads a job log or a file of timestamps one line at a time and
// calls row with the format and each call it holds, keeping nothing itself: memory does
// not grow with the input, whatever its length (a line longer than
// MaxLine is a *LineError, as in Read). The first non-blank line decides
// the format: a line with a tab (past trailing blanks) is a job log's.
// A timestamp is passed as an Entry with only Seq (its position among the
// timestamps, from 1) and Start. It returns the format, the rules a job
// log's header names, and the first error of reading, parsing or row.
func Scan(r io.Reader, row func(f Format, e Entry) error) (Format, []throttle.Rule, error) {
	format, decided := Timestamps, false
	var rules []throttle.Rule
	seq := 0
	err := eachLine(r, func(n int, line string, _ bool) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		if !decided {
			decided = true
			if strings.Contains(strings.TrimRight(line, " \t"), "\t") {
				format = JobLog
			}
		}
		if format == Timestamps {
			t, ok := parseTimestamp(line)
			if !ok {
				return &LineError{Kind: "timestamps", Line: n, Text: line, Msg: timestampWant}
			}
			seq++
			return row(format, Entry{Seq: seq, Start: t})
		}
		if strings.HasPrefix(line, "Seq\tHost\t") {
			if rules == nil {
				hr, err := headerRules(line)
				if err != nil {
					return &LineError{Kind: "job log", Line: n, Text: line, Msg: err.Error()}
				}
				rules = hr
			}
			return nil
		}
		e, msg := parseRow(line)
		if msg != "" {
			return &LineError{Kind: "job log", Line: n, Text: line, Msg: msg}
		}
		return row(format, e)
	})
	return format, rules, err
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
