package joblog

import (
	"strconv"
	"strings"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// ExitCutShort is the Exitval of a row that stands in for a row cut short
// (see Partial.StandIn). Neither pace nor GNU parallel writes it for an
// attempt: pace writes an exit status, an HTTP status or -1.
const ExitCutShort = -2

// standInMark begins the Command of a row that stands in for a row cut
// short: a shell comment, so that a tool that runs the Command of a
// failed row again (GNU parallel's --retry-failed) runs nothing.
const standInMark = "# row cut short (a pace killed as it wrote it): "

// maxQuoted bounds the bytes of the row cut short that its stand-in's
// Command quotes, so that it stays a short line.
const maxQuoted = 200

// StandIn returns the row that Open writes in place of p, a row cut short
// that it cuts off the end of a log, at, an instant after the cut: a whole
// row that keeps p's call for the rules of later runs and for pace audit.
// It holds the fields p holds whole, 0 in the others (":" for Host), but
// for Starttime: when p lacks it, at, the latest the call can have come
// (Partial.Call). Its Exitval is ExitCutShort, its Signal how many fields
// p holds whole (0 to 8, from Seq on; Entry.Partial reads them back), its
// Command a shell comment quoting p. Its Seq is 0 when p is cut within
// its Seq: no item's (a row of pace's has a Seq of at least 1).
//
// Read in its stead, it counts as p's call did (Entry.Call). Package
// resume takes it for no row at all, as if p had been cut off, so its
// item runs again on --resume. GNU parallel reads it as a failed row:
// its --resume skips the item, its --resume-failed runs it again.
func (p *Partial) StandIn(at time.Time) Entry {
	e := Entry{Seq: p.Entry.Seq, Host: ":", Start: at, Exit: ExitCutShort, Signal: p.whole}
	if p.whole > 1 {
		e.Host = p.Entry.Host
	}
	if p.HasStart() {
		e.Start = p.Entry.Start
	}
	if p.HasRuntime() {
		e.Runtime = p.Entry.Runtime
	}
	if p.HasCost() {
		e.Send = p.Entry.Send
	}
	if p.whole > 5 {
		e.Receive = p.Entry.Receive
	}
	text, more := p.Text, ""
	if len(text) > maxQuoted {
		text, more = text[:maxQuoted], "..."
	}
	e.Command = standInMark + strconv.Quote(text) + more
	return e
}

// StandsIn reports whether e stands in for a row cut short (see
// Partial.StandIn): its Exitval is ExitCutShort and its Signal a count of
// fields, 0 to 8.
func (e Entry) StandsIn() bool { return e.Exit == ExitCutShort && e.Signal >= 0 && e.Signal <= 8 }

// Partial returns what the row cut short that e stands in for held whole,
// or nil when e stands in for none. Its Text is the row as e's Command
// quotes it (its first 200 bytes), and its Entry zero in the fields the
// row lacked.
func (e Entry) Partial() *Partial {
	if !e.StandsIn() {
		return nil
	}
	p := &Partial{Text: e.Command, whole: e.Signal}
	if q, ok := strings.CutPrefix(e.Command, standInMark); ok {
		if text, err := strconv.Unquote(strings.TrimSuffix(q, "...")); err == nil {
			p.Text = text
		}
	}
	p.Entry = Entry{Seq: e.Seq, Host: e.Host, Start: e.Start, Runtime: e.Runtime, Send: e.Send, Receive: e.Receive}
	if p.whole < 1 {
		p.Entry.Seq = 0
	}
	if p.whole < 2 {
		p.Entry.Host = ""
	}
	if !p.HasStart() {
		p.Entry.Start = time.Time{}
	}
	return p
}

// Call returns the call e records: at its Starttime, of its cost. For a
// row standing in for one cut short, that is the cut row's call as
// Partial.Call counts it when the stand-in was written: at its Starttime
// (the instant it was found, when the cut row lacked it), and of its cost
// if the cut row held it, else of one that fills every cost rule.
func (e Entry) Call() throttle.Call {
	c := throttle.Call{At: e.Start, Cost: e.Cost()}
	if p := e.Partial(); p != nil && !p.HasCost() {
		c.Cost = throttle.MaxLimit
	}
	return c
}
