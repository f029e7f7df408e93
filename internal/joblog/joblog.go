// Package joblog reads and writes job logs in GNU parallel's --joblog
// format, and makes the row of a pool's result (EntryOf).
//
// A job log is a header line, then one TAB-separated row per attempt:
// Seq Host Starttime JobRuntime Send Receive Exitval Signal Command. pace
// writes the admission instant as Starttime, the call's cost under cost
// rules in Send (GNU parallel's bytes sent to the job's stdin, which pace
// never sends), and the run's rules in the header's last field, after
// "Command": GNU parallel ignores the header's content and reads Send as
// a number, so its --resume and --resume-failed still read pace's logs.
package joblog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pace-cli/pace/internal/regfile"
	"github.com/pace-cli/pace/throttle"
)

// Header is the first line of a job log, as GNU parallel writes it.
const Header = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand"

// rulesMark introduces the rules in a header written by pace:
// "...\tCommand (pace rules: 5/s,12/3s)".
const rulesMark = " (pace rules: "

// Entry is one row of a job log in GNU parallel's --joblog format.
type Entry struct {
	Seq  int    // 1-based job number
	Host string // ":" for the local machine; "" is written as ":"
	// Start is the instant the job was admitted, kept to the microsecond.
	Start time.Time
	// Runtime is how long the job ran, kept to the millisecond (rounded
	// down).
	Runtime time.Duration
	// Send is, for GNU parallel, the bytes sent to the job's stdin; pace
	// writes the call's cost there when it keeps cost rules (else 0).
	// Receive is the bytes of output received.
	Send, Receive int64
	// Exit is the exit status; -1 for a job that pace (or parallel) killed.
	Exit int
	// Signal is the number of the signal that ended the job, else 0.
	Signal int
	// Command is the command line; for fetch, "METHOD URL".
	Command string
}

// Cost returns the call's cost as pace recorded it in Send: at least 1.
func (e Entry) Cost() int { return int(max(e.Send, 1)) }

// Failed reports whether the row records a failure: a non-zero Exitval or
// a Signal, on a row that is no hop's (Entry.Hop: its attempt's own row
// tells how it ended).
func (e Entry) Failed() bool { return (e.Exit != 0 || e.Signal != 0) && !e.Hop() }

// HeaderFor returns the header line pace writes for a run keeping rules.
func HeaderFor(rules []throttle.Rule) string {
	if len(rules) == 0 {
		return Header
	}
	return Header + rulesMark + throttle.FormatRules(rules) + ")"
}

// AppendEntry appends e to dst as one tab-separated row ending in a
// newline, formatted as GNU parallel does: Starttime as epoch seconds with
// 6 decimals, JobRuntime as %10.3f seconds. Newlines in Host or Command
// and tabs in Host become spaces, and trailing carriage returns are
// dropped from Command, so the row reads back as one row; a Command
// longer than a row can hold is cut (FitCommand), so that Read takes it.
func AppendEntry(dst []byte, e Entry) []byte {
	host := e.Host
	if host == "" {
		host = ":"
	}
	host = strings.NewReplacer("\t", " ", "\n", " ").Replace(host)
	if len(host) > maxHost {
		host = host[:maxHost]
	}
	cmd := FitCommand(strings.TrimRight(strings.ReplaceAll(e.Command, "\n", " "), "\r"))

	dst = strconv.AppendInt(dst, int64(e.Seq), 10)
	dst = append(dst, '\t')
	dst = append(dst, host...)
	dst = append(dst, '\t')
	dst = appendFixed(dst, e.Start.Round(time.Microsecond).UnixMicro(), 6)
	dst = append(dst, '\t')
	// Runtime rounded down: Starttime+JobRuntime never passes the job's
	// end, so a job that started when another ended does not appear to
	// overlap it (pace plot's calls in flight stay within -j).
	rt := appendFixed(nil, int64(e.Runtime.Truncate(time.Millisecond)/time.Millisecond), 3)
	dst = fmt.Appendf(dst, "%10s\t%d\t%d\t%d\t%d\t", rt, e.Send, e.Receive, e.Exit, e.Signal)
	dst = append(dst, cmd...)
	return append(dst, '\n')
}

// The longest Host and Command columns a row is written with: with the
// numeric columns (at most some 150 bytes), a row stays within MaxLine.
const (
	maxHost    = 1 << 10
	maxCommand = MaxLine - 2<<10
)

// FitCommand returns command as a job log row holds it: whole, or, past
// the longest Command a row can hold (nearly MaxLine: a command that
// repeats a long item, {} {} {} {} {} of a 1 MiB one, which exec refuses
// anyway), cut there and ended with a note of its length, so that Read
// takes the row. Compare a command with a row's through FitCommand.
func FitCommand(command string) string {
	if len(command) <= maxCommand {
		return command
	}
	note := fmt.Sprintf(" …(cut: %d bytes)", len(command))
	cut := maxCommand - len(note)
	for cut > 0 && !utf8.RuneStart(command[cut]) {
		cut--
	}
	return command[:cut] + note
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

// ErrWriteFailed is wrapped by the errors of a Writer once a row could not
// be written: the log stops there, whole, and later rows are refused.
var ErrWriteFailed = errors.New("job log write failed")

// Writer appends rows to a job log file. Each row is one write to a file
// opened for appending (O_APPEND), so rows land whole at the end of the
// file as it is at that moment: a killed pace loses only the rows of jobs
// still running, other processes appending to the same log (a second pace,
// a note added by hand) lose nothing and splice nothing, and a log cut to
// nothing under a run (logrotate's copytruncate) goes on from its new end
// rather than from a remembered offset (which would leave a hole of NULs).
//
// Writers in different processes take an advisory lock on the file
// (flock) around each row, so that cutting off a torn row never cuts
// another pace's row: a row that cannot be written whole (a full disk) is
// cut off again, so the log never ends in a torn row, and every later
// Write fails at once: the log is well-formed and holds exactly the rows
// written before the failure. A Writer is safe for concurrent use.
type Writer struct {
	path    string
	cut     string // the row cut short that Open cut off
	standIn *Entry // the row Open wrote in its place

	mu     sync.Mutex
	f      *os.File
	buf    []byte
	failed error
}

// Open opens the job log at path for appending, creating it if needed. It
// writes the header (with rules, see HeaderFor) when the file is empty.
// A file that ends in a row cut short (a pace killed as it wrote it, see
// Log.CutShort) has it cut off and replaced by a whole row that stands in
// for it (Partial.StandIn, at the instant Open found it): the row's call
// was made, and its stand-in keeps it for the rules of later runs and for
// pace audit, while package resume takes it for no row, so that the item
// runs again, as the item of any job a killed pace was running, and the
// log stays one a resumed run accepts. A file that ends in anything else
// without a line break gets one first. A path that is not a regular file
// (a FIFO, a device, a directory) is refused at once, with an error
// wrapping regfile.ErrNotRegular.
func Open(path string, rules []throttle.Rule) (*Writer, error) {
	f, err := regfile.Open(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open job log: %w", err)
	}
	w := &Writer{path: path, f: f}
	// Under the lock, so that two pace starting on a new log write one
	// header between them, and a row cut short is a dead pace's, never
	// one that a living pace is writing.
	locked := lock(f)
	if locked {
		defer unlock(f)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open job log: %w", err)
	}
	var prefix string
	if fi.Size() == 0 {
		prefix = HeaderFor(rules) + "\n"
	} else {
		tail, err := lastLine(f, fi.Size())
		if err == nil && locked && cutShort(tail, fi.Size()) {
			err = f.Truncate(fi.Size() - int64(len(tail)))
			w.cut = tail
			e := partialOf(0, tail).StandIn(time.Now())
			w.standIn = &e
			prefix = string(AppendEntry(nil, e))
			if fi.Size() == int64(len(tail)) {
				prefix = HeaderFor(rules) + "\n" + prefix
			}
		} else if err == nil && tail != "" {
			prefix = "\n"
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open job log: %w", err)
		}
	}
	if prefix != "" {
		if err := w.write([]byte(prefix)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return w, nil
}

// lastLine returns what follows the last line break of f, of size > 0
// bytes: "" when f ends in one. A last line longer than MaxLine is no
// row: it is returned as "\x00", which no row is.
func lastLine(f *os.File, size int64) (string, error) {
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil || last[0] == '\n' {
		return "", err
	}
	n := min(size, MaxLine+1)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, size-n); err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 && n < size {
		return "\x00", nil
	}
	return string(b[i+1:]), nil
}

// CutShort returns the row cut short that Open cut off the end of the
// file, or "".
func (w *Writer) CutShort() string { return w.cut }

// StandIn returns the row Open wrote in place of the row cut short it cut
// off (Partial.StandIn), if it did.
func (w *Writer) StandIn() (Entry, bool) {
	if w.standIn == nil {
		return Entry{}, false
	}
	return *w.standIn, true
}

// Path returns the file the Writer appends to.
func (w *Writer) Path() string { return w.path }

// Write appends rows, each one row (see AppendEntry), in one write: the
// rows of one attempt (its hops, HopEntries, and its own) reach the file
// together, and a failed write leaves none of them. Once a write has
// failed it returns that failure, wrapping ErrWriteFailed, without
// writing.
func (w *Writer) Write(rows ...Entry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return w.failed
	}
	w.buf = w.buf[:0]
	for _, e := range rows {
		w.buf = AppendEntry(w.buf, e)
	}
	if lock(w.f) {
		defer unlock(w.f)
	}
	return w.write(w.buf)
}

// write appends b at the end of the file, or cuts off what part of it
// made it and fails for good. Requires w.mu held (or w not yet shared)
// and the file lock.
func (w *Writer) write(b []byte) error {
	n, err := w.f.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 {
			if cerr := w.cutOff(n); cerr != nil {
				err = errors.Join(err, fmt.Errorf("cut off the partial row: %w", cerr))
			}
		}
		w.failed = fmt.Errorf("write job log %s: %w: %w", w.path, ErrWriteFailed, err)
		return w.failed
	}
	return nil
}

// cutOff removes the n bytes the last write left at the end of the file.
// With O_APPEND the write began where the file ended then, whatever its
// length was before, and the descriptor's offset is now just past those
// bytes. Nothing is cut if anything was appended after them (a writer that
// takes no lock): that would cut its row instead. Requires the file lock.
func (w *Writer) cutOff(n int) error {
	end, err := w.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	fi, err := w.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != end {
		return fmt.Errorf("%d bytes were appended after it by another writer", fi.Size()-end)
	}
	return w.f.Truncate(end - int64(n))
}

// Close flushes the file to disk and closes it. It reports a failure to
// flush, which a full disk may report only then.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close job log %s: %w", w.path, err)
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

// Error formats e as "KIND line N: MSG: QUOTED LINE", cutting the quoted
// line after 200 bytes.
func (e *LineError) Error() string {
	text := e.Text
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	return fmt.Sprintf("%s line %d: %s: %q", e.Kind, e.Line, e.Msg, text)
}

// Unwrap returns ErrSyntax.
func (e *LineError) Unwrap() error { return ErrSyntax }

// Log is what a job log holds: the rules pace wrote in its header (none
// for GNU parallel's logs or pace's older ones), and its rows in file
// order, which need not be Seq order.
type Log struct {
	Rules   []throttle.Rule
	Entries []Entry
	// RulesErr is the *LineError of a header that names rules this pace
	// cannot read (a newer pace's, a header edited by hand); Rules is nil
	// then. Only a reader that takes its rules from the header fails on
	// it (RulesOr): a run's own rules, or -r, need none of the header's.
	RulesErr error
	// CutShort is the last line when it is a row that a pace killed as
	// it wrote it left cut short (see cutShort), or nil; Open cuts it off.
	// It is not in Entries: what it holds may be short of a call. Its
	// call was made all the same (Partial.Call).
	CutShort *Partial
}

// SeqOf returns the Seq of row, a row whole or cut short, or 0 when it
// holds no whole one.
func SeqOf(row string) int {
	seq, _, ok := strings.Cut(row, "\t")
	if !ok {
		return 0 // cut within its Seq
	}
	n, _ := strconv.Atoi(seq)
	return n
}

// ShownRow returns row, a job log line, as it may be quoted to a user:
// its Command (what follows its 8th tab) passed through redact, which
// hides the credentials a command line holds. A line of fewer fields, or
// a nil redact, leaves row as it is.
func ShownRow(row string, redact func(string) string) string {
	f := strings.SplitN(row, "\t", 9)
	if len(f) < 9 || redact == nil {
		return row
	}
	f[8] = redact(f[8])
	return strings.Join(f, "\t")
}

// Calls returns the admissions the rows record, in the log's order: each
// row's Starttime and cost (Entry.Call: a row standing in for one cut
// short counts as that row's call did).
func (l *Log) Calls() []throttle.Call {
	calls := make([]throttle.Call, len(l.Entries))
	for i, e := range l.Entries {
		calls[i] = e.Call()
	}
	return calls
}

// Within returns how many rows were admitted inside the longest window of
// rules ending at now: the earlier calls that still count against them.
func (l *Log) Within(rules []throttle.Rule, now time.Time) int {
	var longest time.Duration
	for _, r := range rules {
		longest = max(longest, r.Window)
	}
	n := 0
	for _, e := range l.Entries {
		if e.Start.After(now.Add(-longest)) {
			n++
		}
	}
	return n
}

// Read reads a job log written by pace or by GNU parallel --joblog.
// Header lines and blank lines are skipped, an empty Host becomes ":", and
// everything after the 8th tab is the Command (GNU parallel does not
// escape tabs in commands). A last line without its line break that a
// killed pace's write cut short (cutShort) is CutShort, not an entry.
// Errors are *LineError values; a line longer than MaxLine is one.
func Read(r io.Reader) (*Log, error) { return ReadAtMost(r, 0) }

// ErrTooManyRows is returned by ReadAtMost for a job log of more rows
// than it holds.
var ErrTooManyRows = errors.New("too many rows")

// ReadAtMost reads as Read does, but at most maxRows rows (0: any
// number): a row past them ends the read with an error wrapping
// ErrTooManyRows, so that an endless input (a pipe that never ends)
// cannot grow the log until memory runs out.
func ReadAtMost(r io.Reader, maxRows int) (*Log, error) {
	log := &Log{}
	cr := &countingReader{r: r}
	err := eachLine(cr, func(n int, line string, ended bool) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		// Without a line break the line is the last: cr has read all.
		if !ended && cutShort(line, cr.n) {
			log.CutShort = partialOf(n, line)
			return nil
		}
		if strings.HasPrefix(line, "Seq\tHost\t") {
			if log.Rules == nil && log.RulesErr == nil {
				log.Rules, log.RulesErr = lineRules(n, line)
			}
			return nil
		}
		if maxRows > 0 && len(log.Entries) >= maxRows {
			return fmt.Errorf("job log line %d: %w: more than %d, the most that can be read", n, ErrTooManyRows, maxRows)
		}
		e, msg := parseRow(line)
		if msg != "" {
			return &LineError{Kind: "job log", Line: n, Text: line, Msg: msg}
		}
		log.Entries = append(log.Entries, e)
		return nil
	})
	return log, err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// RulesOr returns given if it holds rules, else the rules the header
// names (none for GNU parallel's), or RulesErr.
func (l *Log) RulesOr(given []throttle.Rule) ([]throttle.Rule, error) {
	if len(given) > 0 {
		return given, nil
	}
	return l.Rules, l.RulesErr
}

// lineRules is headerRules for line n, with a *LineError quoting it.
func lineRules(n int, line string) ([]throttle.Rule, error) {
	rules, err := headerRules(line)
	if err != nil {
		return nil, &LineError{Kind: "job log", Line: n, Text: line, Msg: err.Error()}
	}
	return rules, nil
}

// headerRules returns the rules a header written by pace names, or nil.
func headerRules(line string) ([]throttle.Rule, error) {
	_, rest, ok := strings.Cut(line, rulesMark)
	if !ok {
		return nil, nil
	}
	spec, ok := strings.CutSuffix(rest, ")")
	if !ok {
		return nil, errors.New(`header: want "(pace rules: RULES)" after Command`)
	}
	rules, err := throttle.ParseRules(spec)
	if err != nil {
		var re *throttle.RuleError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("header: rule %q: want %s", re.Spec, re.Want)
		}
		return nil, fmt.Errorf("header: %w", err)
	}
	return rules, nil
}

// cutShort reports whether line, the last of a log of size bytes and
// without its line break, is a row that a write cut short.
//
// pace writes each row with its line break in one write, but the kernel
// copies a write a page at a time, and a SIGKILL stops it between two: a
// pace killed outright as it wrote a row that crossed a page boundary of
// the file left the row's start, and the file ends on a page boundary (a
// multiple of 4096 bytes, whatever the page size). So a last line is cut
// short when what it holds of a row is well-formed (every field it holds
// whole parses, and the one cut is the start of a number, but for Host
// and Command) and it holds fewer than the 9 fields of a row, or all 9
// (the cut in the Command) and the file ends on a page boundary. A whole row
// without its line break (a log edited by hand) ends there once in 4096.
func cutShort(line string, size int64) bool {
	const page = 4096
	f := strings.SplitN(line, "\t", 9)
	switch {
	case len(f) == 1:
		return line != "" && strings.Trim(line, "0123456789") == ""
	case len(f) == 9 && size%page != 0:
		return false
	}
	// The field cut must be the start of one (a number's, but for Host and
	// Command), and the fields before it must parse as they are.
	if k := len(f); k < 9 && k != 2 && !numberStart(f[k-1]) {
		return false
	}
	_, msg := parseRow(filled(f))
	return msg == ""
}

// Partial is a row that a pace killed as it wrote it left cut short (see
// Log.CutShort): its Entry holds the fields that came before the cut,
// whole, and zero in the others. A field is whole when the tab after it
// was written: "12\t:\t17000" holds a Seq and a Host, not a Starttime
// (it may be the start of 1700000000.5).
type Partial struct {
	Line  int    // its 1-based line number
	Text  string // the row as it was cut
	Entry Entry
	whole int // how many fields, from Seq on, it holds whole (0 to 8)
}

// HasStart reports whether the row holds its Starttime whole: when its
// call was admitted.
func (p *Partial) HasStart() bool { return p.whole > 2 }

// HasRuntime reports whether the row holds its JobRuntime whole.
func (p *Partial) HasRuntime() bool { return p.whole > 3 }

// HasCost reports whether the row holds its Send whole: the call's cost
// under cost rules (Entry.Cost).
func (p *Partial) HasCost() bool { return p.whole > 4 }

// HasExit reports whether the row holds its Exitval and Signal whole:
// whether the job failed (Entry.Failed).
func (p *Partial) HasExit() bool { return p.whole > 7 }

// Call returns the call of the row, counted as late and as costly as it
// can have been, for a limiter that holds rules across runs (see
// throttle.Limiter.Seed): a row is written after its call was admitted,
// so the call came no later than at, any instant after the row was cut
// (when a later run read the log). At its Starttime if the row holds it,
// else at at: a call counted later than it came stays in every window
// that holds the call as it came, of a count or a cost rule, ending at
// or after at, which is every window a later admission looks at. Of its
// cost (Send) if the row holds it, else throttle.MaxLimit, which fills
// any cost rule (and counts 1 in a count rule): nothing in the log
// bounds the cost a call had (the estimate the run charged may have been
// corrected by the response to any value), and a cost that fills the
// rule keeps it whatever it was.
func (p *Partial) Call(at time.Time) throttle.Call {
	c := throttle.Call{At: at, Cost: throttle.MaxLimit}
	if p.HasStart() {
		c.At = p.Entry.Start
	}
	if p.HasCost() {
		c.Cost = p.Entry.Cost()
	}
	return c
}

// partialOf returns what line, the n-th and a row cut short (cutShort
// says so), holds whole.
func partialOf(n int, line string) *Partial {
	f := strings.SplitN(line, "\t", 9)
	p := &Partial{Line: n, Text: line, whole: len(f) - 1}
	if p.whole == 0 {
		return p // cut in its Seq
	}
	p.Entry, _ = parseRow(filled(f))
	if p.whole < 2 {
		p.Entry.Host = ""
	}
	if p.whole < 3 {
		p.Entry.Start = time.Time{}
	}
	if !p.HasExit() {
		p.Entry.Exit, p.Entry.Signal = 0, 0
	}
	return p
}

// filled returns the row whose fields a row cut short holds, f, with the
// field cut and those missing given values that parse: 0 for the numbers
// ("" for Host, Unix 0 for Starttime), but ExitCutShort for the Exitval
// of a Seq of 0, which only a row standing in for a row cut short has. A
// Command cut is kept as it is.
func filled(f []string) string {
	fill := [9]string{"1", "", "0", "0", "0", "0", "0", "0", ""}
	if f[0] == "0" {
		fill[6] = strconv.Itoa(ExitCutShort)
	}
	if len(f) < 9 {
		f = append(f[:len(f)-1:len(f)-1], fill[len(f)-1:]...)
	}
	return strings.Join(f, "\t")
}

// numberStart reports whether s may be the start of a row's number, as
// cut short: blanks (JobRuntime is padded), a sign, digits, one point.
func numberStart(s string) bool {
	s = strings.TrimPrefix(strings.TrimLeft(s, " "), "-")
	whole, frac, _ := strings.Cut(s, ".")
	return allDigits(whole) && allDigits(frac)
}

// parseRow parses one row; msg is non-empty when it is malformed.
func parseRow(line string) (e Entry, msg string) {
	f := strings.SplitN(line, "\t", 9)
	if len(f) < 9 {
		return e, fmt.Sprintf("got %d tab-separated fields, want 9: %s",
			len(f), strings.ReplaceAll(Header, "\t", " "))
	}
	var err error
	bad := func(field, value, want string) string {
		return fmt.Sprintf("%s %q is not %s", field, value, want)
	}
	if e.Seq, err = strconv.Atoi(strings.TrimSpace(f[0])); err != nil {
		return e, bad("Seq", f[0], "an integer")
	}
	// Seq is the item's position in the input, from 1; resuming matches
	// items by it. A row standing in for one cut within its Seq has 0
	// (checked once its Exitval and Signal are read), and so does one
	// standing in for such a row, cut short in turn.
	seqBad := fmt.Sprintf("Seq %q must be at least 1 (the item's position in the input, from 1)", f[0])
	if e.Seq < 0 {
		return e, seqBad
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
	count := func(field, value string) (int64, string) {
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return 0, fmt.Sprintf("%s %q is out of range", field, value)
		case err != nil:
			return 0, bad(field, value, "an integer")
		case n < 0:
			return 0, fmt.Sprintf("%s %q must be at least 0", field, value)
		}
		return n, ""
	}
	if e.Send, msg = count("Send", f[4]); msg != "" {
		return e, msg
	}
	if e.Receive, msg = count("Receive", f[5]); msg != "" {
		return e, msg
	}
	if e.Exit, err = strconv.Atoi(strings.TrimSpace(f[6])); err != nil {
		return e, bad("Exitval", f[6], "an integer")
	}
	if e.Signal, err = strconv.Atoi(strings.TrimSpace(f[7])); err != nil {
		return e, bad("Signal", f[7], "an integer")
	}
	if e.Seq == 0 && !e.StandsIn() {
		return e, seqBad
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
	err := eachLine(r, func(n int, line string, _ bool) error {
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

// MaxLine is the longest line Read and ReadTimestamps accept: no row
// pace writes is longer (FitCommand).
const MaxLine = 4 << 20

// eachLine calls fn with each line of r and its 1-based number, without
// the line break (trailing carriage returns are dropped too), and whether
// the line had one (only the last line may not). A line longer than
// MaxLine is a *LineError, so that garbage such as /dev/zero cannot grow
// memory without bound.
func eachLine(r io.Reader, fn func(n int, line string, ended bool) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for n := 1; ; n++ {
		chunk, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > MaxLine {
				return &LineError{Kind: "file", Line: n, Text: string(append(long, chunk...)[:200]),
					Msg: fmt.Sprintf("line longer than %d MiB: not a job log or timestamp file", MaxLine>>20)}
			}
			long = append(long, chunk...)
			chunk, err = br.ReadSlice('\n')
		}
		line := string(append(long, chunk...))
		long = long[:0]
		if len(line) > MaxLine {
			return &LineError{Kind: "file", Line: n, Text: line[:200],
				Msg: fmt.Sprintf("line longer than %d MiB: not a job log or timestamp file", MaxLine>>20)}
		}
		if line != "" {
			body, ended := strings.CutSuffix(line, "\n")
			if ferr := fn(n, strings.TrimRight(body, "\r"), ended); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", n, err)
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
