// Package resume decides which items a resumed run skips, from the rows of
// an earlier run's job log (package joblog keeps the file format), and
// checks that the input is the one the log was written for.
package resume

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/runner"
)

// Mode says which items of an earlier run a resumed run skips.
type Mode int

const (
	// All skips every item that has a row in the job log, whatever
	// its outcome (pace --resume, as GNU parallel's --resume).
	All Mode = iota + 1
	// Failed skips the items whose last row succeeded and runs again
	// those whose last row failed (pace --resume-failed). Items without a
	// row run in both modes.
	Failed
)

// ErrInputChanged is wrapped by the error of a resumed run whose input is
// not the one the job log was written for.
var ErrInputChanged = errors.New("input differs from the job log")

// ErrTooFarAhead is wrapped by the error of a resumed run whose job log's
// highest Seq is too far ahead of its rows to check the input against it
// (an *AheadError).
var ErrTooFarAhead = errors.New("job log too far ahead of its rows")

// InputChangedError reports an item whose command is not the one the job
// log's row for the same Seq ran: skipping by Seq would skip the wrong
// items.
type InputChangedError struct {
	Seq     int64
	Command string // what the item would run now
	Logged  string // what the job log says ran
}

// Error says which item differs, and how: long commands are quoted
// around where they first differ.
func (e *InputChangedError) Error() string {
	now, logged := around(e.Command, e.Logged)
	return fmt.Sprintf("resume: item %d would run %q but the job log's row %d ran %q; "+
		"resuming needs the same input and command as the run that wrote the log", e.Seq, now, e.Seq, logged)
}

// around returns a and b as a message quotes them: whole when short,
// else each cut to some 120 bytes from a little before where they first
// differ, with "…" where cut. A command of megabytes was quoted whole.
func around(a, b string) (string, string) {
	const keep, before = 120, 40
	if len(a) <= keep && len(b) <= keep {
		return a, b
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-before)
	cut := func(s string) string {
		start := min(from, len(s))
		for start > 0 && start < len(s) && !utf8.RuneStart(s[start]) {
			start--
		}
		end := min(len(s), start+keep)
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end--
		}
		out := s[start:end]
		if start > 0 {
			out = "…" + out
		}
		if end < len(s) {
			out += "…"
		}
		return out
	}
	return cut(a), cut(b)
}

// Unwrap returns ErrInputChanged.
func (e *InputChangedError) Unwrap() error { return ErrInputChanged }

// Options configure a Resume.
type Options struct {
	// Mode says which logged items to skip; the zero value means All.
	Mode Mode
	// Command returns the job log Command that job would be written with
	// (job.Slot is set, job.Argv is not). It must not keep job. nil skips
	// the check that the input is the one the log was written for. An
	// error (an item that cannot be prepared any more, such as a deleted
	// data file) leaves that item unchecked.
	Command func(job *runner.Job) (string, error)
	// MaxSlot bounds the slots tried one by one when a command depends
	// on the job slot ({%}); 0 means 64. A higher slot is found from the
	// digits where the logged command first differs from slot 1's.
	MaxSlot int
	// MaxAhead bounds the bytes of the items without a row that ReadItems
	// holds while it reads ahead to the log's highest Seq (see ReadItems);
	// 0 means DefaultMaxAhead or the bytes of the log's Commands, whichever
	// is more.
	MaxAhead int64
}

// DefaultMaxAhead is the least Options.MaxAhead: in a log that pace wrote,
// the items up to its highest Seq without a row are about -j, those that
// were running when it stopped.
const DefaultMaxAhead = 32 << 20

// AheadError reports a job log whose highest Seq is so far ahead of the
// rows it has that the items without a row up to it would not fit in
// Options.MaxAhead: a log with a bogus Seq, or another input's log.
type AheadError struct {
	Seq    int64 // the item that went past MaxAhead
	MaxSeq int64 // the log's highest Seq
	Held   int64 // the bytes held, items without a row
}

// Error says how far ahead the log goes, and why that is refused.
func (e *AheadError) Error() string {
	return fmt.Sprintf("resume: the job log has a row for item %d, but too many items before it have none "+
		"(by item %d, %s of items would be held to check the input before running any); "+
		"is it the job log of this input?", e.MaxSeq, e.Seq, human.Bytes(e.Held))
}

// Unwrap returns ErrTooFarAhead.
func (e *AheadError) Unwrap() error { return ErrTooFarAhead }

// Resume decides, from the job log of earlier runs over the same input,
// which items a resumed run skips, and checks that the input is the same:
// items are matched by Seq, their position in the input, so an input that
// changed would make a resumed run skip the wrong items.
//
// Make one with New. Its methods may be called concurrently.
type State struct {
	opts    Options
	last    map[int64]row // the last row of each Seq, in file order
	max     int64
	skipped atomic.Int64 // items ReadItems sent marked Skip
}

// row is what State keeps of a Seq's last row.
type row struct {
	command string
	failed  bool
}

// Skipped returns how many items ReadItems has sent marked Skip so far.
func (r *State) Skipped() int64 { return r.skipped.Load() }

// New returns the Resume for a job log's entries, in file order.
// With retries a Seq has one row per attempt; the last one counts. A row
// standing in for a row cut short (joblog.Entry.StandsIn) counts for
// nothing: its item is as if that row had been cut off, so it runs again
// unless an earlier row of it says otherwise, and its Command (a comment
// quoting the row) is not checked against the input.
func New(entries []joblog.Entry, opts Options) *State {
	if opts.Mode == 0 {
		opts.Mode = All
	}
	if opts.MaxSlot <= 0 {
		opts.MaxSlot = 64
	}
	r := &State{opts: opts, last: make(map[int64]row, len(entries))}
	var commands int64
	for _, e := range entries {
		seq := int64(e.Seq)
		if seq < 1 || e.StandsIn() || e.Hop() {
			continue
		}
		r.last[seq] = row{command: e.Command, failed: e.Failed()}
		r.max = max(r.max, seq)
		commands += int64(len(e.Command))
	}
	if r.opts.MaxAhead <= 0 {
		r.opts.MaxAhead = max(DefaultMaxAhead, commands)
	}
	return r
}

// MaxSeq returns the highest Seq in the log, 0 for an empty one.
func (r *State) MaxSeq() int64 { return r.max }

// Skip reports whether item seq is done and must not run again.
func (r *State) Skip(seq int64) bool {
	e, ok := r.last[seq]
	if !ok {
		return false
	}
	return r.opts.Mode == All || !e.failed
}

// Skipping returns how many logged items Skip would skip among the first
// upTo items; upTo < 0 means all of them.
func (r *State) Skipping(upTo int64) int64 {
	var n int64
	for seq := range r.last {
		if (upTo < 0 || seq <= upTo) && r.Skip(seq) {
			n++
		}
	}
	return n
}

// Again returns how many logged items run again: under Failed, those
// whose last row failed; under All, none.
func (r *State) Again() int64 {
	return int64(len(r.last)) - r.Skipping(-1)
}

// Verify checks job (Seq and Item set) against the log: it returns an
// *InputChangedError when the log has a row for job.Seq that ran another
// command. A command that uses the job slot matches if any slot up to
// MaxSlot gives the logged command.
func (r *State) Verify(job runner.Job) error {
	e, ok := r.last[job.Seq]
	if !ok || r.opts.Command == nil {
		return nil
	}
	command := func(slot int) (string, error) {
		j := job
		j.Slot, j.Attempt, j.Argv = slot, 1, nil
		return r.opts.Command(&j)
	}
	first, err := command(1)
	if err != nil || sameCommand(first, e.command) {
		return nil
	}
	for slot := 2; slot <= r.opts.MaxSlot; slot++ {
		c, err := command(slot)
		if err != nil || c == first {
			break // the slot plays no part
		}
		if sameCommand(c, e.command) {
			return nil
		}
	}
	// A slot past MaxSlot (a run of -j 100): the logged command holds
	// it, as digits, where it first differs from slot 1's.
	for _, slot := range slotsAt(first, e.command) {
		if slot <= r.opts.MaxSlot {
			continue
		}
		if c, err := command(slot); err == nil && sameCommand(c, e.command) {
			return nil
		}
	}
	return &InputChangedError{Seq: job.Seq, Command: first, Logged: e.command}
}

// sameCommand reports whether the job log row's command logged is c: the
// same text (a command too long for a row compared as the row holds it,
// cut), or the same words quoted another way, as GNU parallel quotes an
// item with a ' in it ('it'"'"'s' where pace writes "it's").
func sameCommand(c, logged string) bool {
	fit := joblog.FitCommand(c)
	if fit == logged {
		return true
	}
	if fit != c {
		return false // cut: only its text can be compared
	}
	a, ok := plainWords(c)
	if !ok {
		return false
	}
	b, ok := plainWords(logged)
	return ok && slices.Equal(a, b)
}

// plainWords splits s, a command line as pace or GNU parallel writes one,
// into its words, undoing their quoting: '...', "..." (where \ escapes $,
// `, ", \ and a newline) and \ outside quotes. ok is false where s holds
// anything a shell reads as more than words (an operator, an expansion, a
// glob, a comment, an assignment, a line break, unquoted), or a quote left
// open: such commands are compared by their text only.
func plainWords(s string) (words []string, ok bool) {
	var w strings.Builder
	in := false // a word is under way
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			w.WriteString(s[i+1 : i+1+j])
			i, in = i+1+j, true
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				switch s[i] {
				case '$', '`':
					return nil, false
				case '\\':
					if i+1 < len(s) && s[i+1] == '\n' {
						return nil, false // a line continued
					}
					if i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0 {
						i++
					}
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, false
			}
			in = true
		case c == '\\':
			if i+1 >= len(s) || s[i+1] == '\n' {
				return nil, false
			}
			i++
			w.WriteByte(s[i])
			in = true
		case strings.IndexByte(";&|<>()$`*?[]~#{}=!\n\r", c) >= 0:
			return nil, false
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words, true
}

// slotsAt returns the numbers of up to 9 digits that logged holds about
// where it first differs from first (the command in slot 1): the slots
// that may have given logged.
func slotsAt(first, logged string) []int {
	i := 0
	for i < len(first) && i < len(logged) && first[i] == logged[i] {
		i++
	}
	digit := func(j int) bool { return j >= 0 && j < len(logged) && logged[j] >= '0' && logged[j] <= '9' }
	start, end := i, i
	for start > i-9 && digit(start-1) {
		start--
	}
	for end < i+9 && digit(end) {
		end++
	}
	var slots []int
	for a := start; a < end; a++ {
		n := 0
		for b := a; b < end && b < a+9; b++ {
			n = n*10 + int(logged[b]-'0')
			if n > 0 {
				slots = append(slots, n)
			}
		}
	}
	return slots
}

// ReadItems reads items from rd as items.Read does, and sends them on
// out marked with Skip where r says so. It reads ahead up to the item with
// the log's highest Seq (or to the end of the input) and Verifies every
// item the log has a row for; no item that runs is sent until all of them
// match, so a changed input is refused before any job runs. Items to skip
// are sent at once, as Skip markers without their text, unless an item
// that runs comes before them; only the items that run are held, so
// memory grows with the items up to the highest Seq that have no row or
// failed, not with the input. The items without a row may hold at most
// Options.MaxAhead bytes: past that, ReadItems refuses the log (an
// *AheadError) rather than hold an endless input. It returns the
// *InputChangedError or *AheadError, the read error, or ctx's error. It
// does not close out.
func (r *State) ReadItems(ctx context.Context, rd io.Reader, opts items.ReadOptions, out chan<- runner.Item) error {
	send := func(it runner.Item) error {
		select {
		case out <- it:
			if it.Skip {
				r.skipped.Add(1)
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// held are the items up to MaxSeq that run, waiting until all the
	// logged ones are verified, each with the Skip markers that follow it.
	var held []heldItem
	var ahead int64 // the bytes of held items without a row
	flush := func() error {
		for i, h := range held {
			if err := send(h.item); err != nil {
				return err
			}
			for range h.skips {
				if err := send(runner.Item{Skip: true}); err != nil {
					return err
				}
			}
			held[i] = heldItem{} // let the item go
		}
		held, ahead = nil, 0
		return nil
	}
	var seq int64
	err := items.Scan(items.WithContext(ctx, rd), opts, func(it runner.Item) error {
		seq++
		if seq > r.max {
			if err := flush(); err != nil {
				return err
			}
			return send(it)
		}
		if it.Err == nil {
			if err := r.Verify(runner.Job{Seq: seq, Item: it.Text, Cols: it.Cols}); err != nil {
				return err
			}
		}
		switch {
		case r.Skip(seq) && len(held) == 0:
			if err := send(runner.Item{Skip: true}); err != nil {
				return err
			}
		case r.Skip(seq):
			held[len(held)-1].skips++
		default:
			if _, logged := r.last[seq]; !logged {
				ahead += itemSize(it)
				if ahead > r.opts.MaxAhead {
					return &AheadError{Seq: seq, MaxSeq: r.max, Held: ahead}
				}
			}
			held = append(held, heldItem{item: it})
		}
		if seq == r.max {
			return flush()
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	return flush() // the input has fewer items than the log
}

// heldItem is an item ReadItems holds until the input is verified, and
// how many Skip markers follow it.
type heldItem struct {
	item  runner.Item
	skips int64
}

// itemSize is about the memory it takes: its text, its columns and the
// headers that point to them.
func itemSize(it runner.Item) int64 {
	n := int64(len(it.Text)) + int64(unsafe.Sizeof(heldItem{}))
	for _, c := range it.Cols {
		n += int64(len(c)) + int64(unsafe.Sizeof(c))
	}
	return n
}
