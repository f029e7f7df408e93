package runner

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pace-cli/pace/throttle"
)

// ErrPermanent marks a failure that would happen again on every attempt,
// such as a command line that cannot be parsed or a program that does not
// exist. The pool never retries a result whose Err wraps it.
var ErrPermanent = errors.New("permanent failure")

// ErrNotStarted marks an attempt that was admitted but could not start for
// lack of resources of pace's own (too many open files, no memory for a
// process): not a failure of the job. The pool tries it again, without
// counting it as an attempt, and a job log has no row for it.
var ErrNotStarted = errors.New("could not start for lack of resources")

// ErrOutput marks a job whose output could not be written where it goes
// (a full disk under an output directory): a failure of the machine pace
// runs on, not of the job, and every later job would fail alike. Executors
// wrap it; a pool's user stops admissions when a result carries it.
var ErrOutput = errors.New("output could not be written")

// permanentFailure is an error that wraps ErrPermanent without saying so
// in its message.
type permanentFailure struct{ err error }

func (e *permanentFailure) Error() string        { return e.err.Error() }
func (e *permanentFailure) Unwrap() error        { return e.err }
func (e *permanentFailure) Is(target error) bool { return target == ErrPermanent }

// Permanent returns err marked as a permanent failure: errors.Is(.,
// ErrPermanent) holds, and the message is err's.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentFailure{err: err}
}

// ErrKillNow, as the cause of a context's cancellation (see
// context.WithCancelCause), asks executors to kill running jobs at once
// instead of terminating them gracefully. Its text is what a user reads
// of a job so ended ("job 3: GET https://...: read body: killed").
var ErrKillNow = errors.New("killed")

// Item is one input item as read, or the error that reading it met (for
// instance an item longer than allowed). An item with an error becomes a
// failed job that never starts.
type Item struct {
	Text string
	// Cols are the item's columns, when the input is split into columns
	// (nil: the item is one column).
	Cols []string
	Err  error
	// Skip marks an item that takes its Seq but does not run and has no
	// events, such as one that a resumed run finds done in its job log.
	Skip bool
}

// Job is one attempt at running an item.
type Job struct {
	// Seq numbers the item in input order, from 1.
	Seq int64
	// Item is the input item.
	Item string
	// Cols are the item's columns (nil: the item is one column).
	Cols []string
	// Attempt counts attempts at this item, from 1.
	Attempt int
	// Slot is the job slot, 1..Options.Jobs, lowest free first. No two
	// jobs in flight share a slot.
	Slot int
	// Argv is what the job runs, set by Executor.Prepare. For commands it
	// is the argv; other executors put what identifies the call there.
	Argv []string
	// Cost is what the call costs under cost rules, set by
	// Executor.Prepare; 0 means 1.
	Cost int
	// Admission is the admission the attempt runs under, set by the pool
	// before Execute (the zero Admission when none). The pool releases
	// and corrects it; executors only read it.
	Admission throttle.Admission
	// Prepared is what Executor.Prepare kept for Execute, the executor's
	// own (such as the request it built), so that the attempt is not
	// built twice. The pool clears it with Argv before a retry is
	// prepared again, and in the Result.
	Prepared any
}

// CommandLine returns Argv as one line, each argument quoted for a shell
// where needed (Quote), so that the line can be pasted into one, stays on
// one line and cannot drive a terminal.
func (j *Job) CommandLine() string { return commandLine(j.Argv, Quote) }

// commandLine joins argv quoted with quote.
func commandLine(argv []string, quote func(string) string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		q := quote(a)
		if i == 0 && q == a && strings.Contains(a, "=") {
			q = "'" + a + "'" // NAME=value first would be an assignment
		}
		b.WriteString(q)
	}
	return b.String()
}

// SplitCommandLine splits line, as Job.CommandLine quotes it, back
// into its arguments: words separated by single spaces, each bare, in
// single quotes (a single quote in a word closes them, is escaped and
// opens them again), in double quotes or in ANSI-C quotes ($'...'). ok is
// false for a line that CommandLine could not have written, now or before
// it wrote control characters in ANSI-C quotes (when it wrote them raw in
// single quotes: a job log of an earlier pace).
func SplitCommandLine(line string) (argv []string, ok bool) {
	argv, ok = splitWords(line)
	if !ok || commandLine(argv, Quote) != line && commandLine(argv, quotePOSIX) != line {
		return nil, false
	}
	return argv, true
}

// splitWords reads line's words for SplitCommandLine.
func splitWords(line string) (argv []string, ok bool) {
	if line == "" {
		return nil, false
	}
	var b strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case ' ':
			if !inWord {
				return nil, false
			}
			argv = append(argv, b.String())
			b.Reset()
			inWord = false
		case '$':
			text, n, ok := UnquoteANSI(line[i:])
			if !ok {
				return nil, false // Quote writes '$' in quotes only
			}
			b.WriteString(text)
			i += n - 1 // at the closing quote
			inWord = true
		case '\'', '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, false
			}
			b.WriteString(line[i+1 : i+1+end])
			i += 1 + end
			inWord = true
		case '\\':
			if i+1 == len(line) {
				return nil, false
			}
			i++
			b.WriteByte(line[i])
			inWord = true
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if !inWord {
		return nil, false
	}
	return append(argv, b.String()), true
}

// The escapes Quote writes in ANSI-C quotes: a backslash and the letter
// at an index of escapeLetters stand for the byte at that index of
// escapeBytes.
const (
	escapeLetters = "abefnrtv\\'"
	escapeBytes   = "\a\b\x1b\f\n\r\t\v\\'"
)

// UnquoteANSI reads the ANSI-C quotes ($'...') that begin s, as Quote
// writes them: it returns their text and how many bytes of s they take,
// from the '$' to the closing quote. ok is false when s does not begin
// with them, they are not closed, or they hold an escape Quote does not
// write (\x41, \u00e9, \cA, \", an octal escape of fewer than three
// digits), which is left to a shell.
func UnquoteANSI(s string) (text string, n int, ok bool) {
	if !strings.HasPrefix(s, "$'") {
		return "", 0, false
	}
	var b strings.Builder
	for i := 2; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			return b.String(), i + 1, true
		case '\\':
			if i+1 < len(s) {
				if k := strings.IndexByte(escapeLetters, s[i+1]); k >= 0 {
					b.WriteByte(escapeBytes[k])
					i++
					continue
				}
			}
			if i+3 >= len(s) || !isOctal(s[i+1]) || s[i+1] > '3' || !isOctal(s[i+2]) || !isOctal(s[i+3]) {
				return "", 0, false
			}
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

// Quote returns s quoted for a shell: unchanged when it is made only of
// characters no shell treats specially; in ANSI-C quotes ($'...', as
// bash's printf %q writes them) when it holds a control character, a rune
// that is not printable (strconv.IsPrint: bidirectional overrides, C1
// controls) or invalid UTF-8, each written as an escape (\n, \t, \e,
// \ooo for each byte of the rest), so that it stays on one line and cannot
// drive a terminal; else in quotes as a POSIX shell reads them: double
// quotes for a string with a single quote and nothing double quotes
// expand, single quotes otherwise. bash, zsh, ksh and the sh of
// POSIX.1-2024 read ANSI-C quotes; dash 0.5.12 does not.
func Quote(s string) string {
	if !needsANSI(s) {
		return quotePOSIX(s)
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case s[i] == '\\' || s[i] == '\'':
			writeEscape(&b, s[i])
		case shownRaw(r, size):
			b.WriteString(s[i : i+size])
		default:
			for _, c := range []byte(s[i : i+size]) {
				writeEscape(&b, c)
			}
		}
		i += size
	}
	b.WriteByte('\'')
	return b.String()
}

// needsANSI reports whether Quote writes s in ANSI-C quotes.
func needsANSI(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f {
			return true
		} else if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !shownRaw(r, size) {
				return true
			}
			i += size - 1
		}
	}
	return false
}

// writeEscape writes byte c as an escape in ANSI-C quotes.
func writeEscape(b *strings.Builder, c byte) {
	b.WriteByte('\\')
	if k := strings.IndexByte(escapeBytes, c); k >= 0 {
		b.WriteByte(escapeLetters[k])
		return
	}
	b.WriteByte('0' + c>>6)
	b.WriteByte('0' + c>>3&7)
	b.WriteByte('0' + c&7)
}

// quotePOSIX is Quote without ANSI-C quotes, as pace quoted before them:
// control characters raw in single quotes.
func quotePOSIX(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("_@%+=:,./-", c) >= 0) {
			safe = false
			break
		}
	}
	switch {
	case safe:
		return s
	case strings.Contains(s, "'") && !strings.ContainsAny(s, "\"$`\\!"):
		return `"` + s + `"` // it's reads better than 'it'\''s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Result is how one attempt ended. It carries what a job log row needs:
// the job (sequence number, attempt, command line), the admission instant,
// the runtime, the exit code and the signal.
type Result struct {
	Job Job
	// Start is the instant the limiter admitted the attempt; zero if it
	// was never admitted.
	Start time.Time
	// Waited is how long admission took (the rules, the in-flight cap,
	// pauses).
	Waited time.Duration
	// Runtime is the time from admission to the end of the attempt.
	Runtime time.Duration
	// Sent is when the call left, as the executor saw it: the child's exec
	// returned, or the request was written. Zero when unknown (it never
	// left, or the executor cannot tell).
	Sent time.Time
	// Lag is the admission's latency plus the time from the admission's
	// return to Sent: how long after the limiter recorded the call it
	// really left. Zero when Sent is.
	Lag time.Duration
	// Answered is when the call's answer came (a response's headers),
	// which bounds when the call arrived; zero when unknown. NewConn says
	// that the call went on a connection opened for it.
	Answered time.Time
	NewConn  bool
	// Local says that the call went to a server on this machine
	// (pacehttp.Info.Local): only then does its answer bound when it was
	// read.
	Local bool
	// CPU and Queued are how long the child process's main thread ran on
	// a CPU and waited for one while runnable (Linux's
	// /proc/PID/schedstat, read as it exited): how much a busy machine
	// slowed it. Zero when unknown.
	CPU, Queued time.Duration
	// Cost is the call's true cost when the executor learned it from the
	// call (a response header or body); 0 when it did not. The pool then
	// corrects the admission's cost before releasing it.
	Cost int
	// ExitCode is the process's exit code, or -1 when it did not exit
	// normally (killed by a signal, or never started).
	ExitCode int
	// Signal is the number of the signal that killed the process, or 0.
	Signal int
	// TimedOut is set when the attempt ran past its timeout and was killed.
	TimedOut bool
	// Timeout is the limit that TimedOut refers to.
	Timeout time.Duration
	// Err is set when the job could not run or its output could not be
	// kept: a command line that does not parse, a program not found.
	Err error
	// Stdout and Stderr hold the attempt's output; either may be nil. The
	// pool closes them once the result has been reported.
	Stdout, Stderr *Capture
	// HTTP is set by the fetch executor: the response's status, size and
	// any pause it caused.
	HTTP *HTTPInfo
}

// AnswerLag returns how long after the limiter recorded the call its
// answer came, counted as Lag is, and whether it is known (Sent and
// Answered are set).
func (r *Result) AnswerLag() (time.Duration, bool) {
	if r.Sent.IsZero() || r.Answered.IsZero() {
		return 0, false
	}
	return r.Lag + r.Answered.Sub(r.Sent), true
}

// HTTPInfo is what a fetch attempt adds to its Result.
type HTTPInfo struct {
	// Method and URL say what was fetched; URL has its credentials
	// redacted.
	Method, URL string
	// StatusCode is the final response's status, or 0 if none came.
	StatusCode int
	// Status is the status line's text, such as "200 OK".
	Status string
	// Proto is the protocol of the response, such as "HTTP/2.0".
	Proto string
	// Bytes counts the body bytes kept: written to Result.Stdout or to
	// File. The body of a failed response is not counted.
	Bytes int64
	// File is the file the body was written to, with an output directory.
	File string
	// PauseUntil is set when this response made the executor pause all
	// admissions (429 or 503, or rate-limit headers saying the quota is
	// spent); PauseReason says why.
	PauseUntil  time.Time
	PauseReason string
	// Conn is set when no response came because of the connection:
	// "refused", "reset", "dns", "timeout", "tls".
	Conn string
	// Policy is the rate rules the response's headers publish, if any
	// (RateLimit-Policy and the like); PolicyHeader names the header.
	Policy       []throttle.Rule
	PolicyHeader string
	// RetryAfter is how long a 429 or 503 asked to wait, if it said.
	RetryAfter time.Duration
	// Hops are the calls the attempt made besides its own, each admitted
	// under the rules, in the order they were admitted (see Hop).
	Hops []Hop
}

// Hop is a call an HTTP attempt made besides its own (pacehttp.Info.Hops):
// a redirect followed, or the request sent again by the transport after
// a kept-alive connection failed. The server counts each as a call, so a
// job log keeps a row for each.
type Hop struct {
	Start   time.Time     // when the rules admitted it
	Runtime time.Duration // from Start to its answer's headers, or to its failure
	Cost    int           // its cost as the rules last recorded it
	// Method and URL say what it sent; URL has its credentials redacted.
	Method, URL string
	Again       bool // sent again by the transport, not a redirect
}

// OK reports whether the attempt succeeded: it ran and exited with status 0.
func (r *Result) OK() bool {
	return r.Err == nil && r.ExitCode == 0 && r.Signal == 0 && !r.TimedOut
}

// Status describes how the attempt ended in a few words: "ok", "exit
// status 2", "timed out after 5s", "killed by SIGKILL", or the error.
func (r *Result) Status() string {
	switch {
	case r.Err != nil:
		return r.Err.Error()
	case r.TimedOut:
		return fmt.Sprintf("timed out after %v", r.Timeout)
	case r.Signal != 0:
		return "killed by " + signalName(r.Signal)
	case r.ExitCode != 0:
		return fmt.Sprintf("exit status %d", r.ExitCode)
	}
	return "ok"
}

// Close removes the result's captured output, including temporary files.
func (r *Result) Close() error {
	return errors.Join(r.Stdout.Close(), r.Stderr.Close())
}

// signalNames names the signals whose numbers are the same on every unix.
var signalNames = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}

// signalName returns the conventional name of signal number n, such as
// "SIGKILL", or "signal n" for a number without a portable name.
func signalName(n int) string {
	if s, ok := signalNames[n]; ok {
		return s
	}
	return fmt.Sprintf("signal %d", n)
}

// EventKind tells what an Event reports.
type EventKind int

const (
	// JobStarted: an attempt was admitted and is starting. Event.Job and
	// Event.Admission are set.
	JobStarted EventKind = iota + 1
	// JobFinished: an attempt ended. Event.Result is set, and Event.Retry
	// says whether another attempt at the item will follow.
	JobFinished
	// JobNotStarted: an admitted attempt could not start for lack of
	// pace's own resources (see ErrNotStarted). Event.Result is set; the
	// same attempt will be tried again.
	JobNotStarted
	// JobDone: an item's final result. Event.Result is set. With
	// KeepOrder these come in input order, else right after the final
	// JobFinished. Items that fail before they start (an Item with Err, a
	// Prepare error) have a JobDone without a JobStarted.
	JobDone
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case JobStarted:
		return "started"
	case JobFinished:
		return "finished"
	case JobNotStarted:
		return "not started"
	case JobDone:
		return "done"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is what the pool reports through Options.OnEvent.
type Event struct {
	Kind EventKind
	// Job is the attempt that started (JobStarted), else Result.Job.
	Job Job
	// Admission is the attempt's admission as it started (JobStarted): a
	// copy, which the pool releases and corrects on its own.
	Admission throttle.Admission
	// Result is set for JobFinished, JobNotStarted and JobDone. The
	// callback may read its output but must not keep it: the pool closes
	// it afterwards.
	Result *Result
	// Retry is set on a JobFinished whose item will be tried again.
	Retry bool
	// RetryDropped is set on a JobDone whose Result was already reported
	// by a JobFinished with Retry set, and whose retry was then dropped
	// (Stop, a cancelled context or a failed admission during its
	// backoff): that attempt stands as the item's last. Count attempts by
	// JobFinished events; a JobDone with RetryDropped is not one more.
	RetryDropped bool
	// InFlight is the number of attempts running after the event.
	InFlight int
}
