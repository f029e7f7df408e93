package plot

import (
	"strconv"
	"time"
)

// A Rule is one rate rule, "N per Window": no half-open window
// (t-Window, t] may hold more than N calls or, for a Cost rule, calls
// whose costs add up to more than N. The picture draws, over time, how
// full that window is as a fraction of N. Render requires N >= 1 and
// Window > 0.
type Rule struct {
	N      int
	Window time.Duration
	// Cost makes the rule limit the sum of the calls' costs rather than
	// their number.
	Cost bool
	// Label names the rule on the picture, such as "5/s" or
	// "cost:100/s"; it may hold any text. Empty draws "N/Window".
	Label string
}

// label returns the rule's name as drawn.
func (r Rule) label() string {
	if r.Label != "" {
		return r.Label
	}
	return strconv.Itoa(r.N) + "/" + r.Window.String()
}

// Outcome is how one call (one attempt) ended. The zero value is OK.
type Outcome uint8

// The outcomes a call can have.
const (
	OK      Outcome = iota // the call succeeded
	Failed                 // the call failed and was not tried again
	Retried                // the call failed and was tried again
	Refused                // the server answered 429 Too Many Requests
	numOutcomes
)

// outcomeNames are the names String returns, used in data-outcome
// attributes; legendNames are the legend's words.
var (
	outcomeNames = [numOutcomes]string{"ok", "failed", "retried", "refused"}
	legendNames  = [numOutcomes]string{"ok", "failed", "retried", "429"}
)

// String returns "ok", "failed", "retried" or "refused", or
// "Outcome(N)" for a value that is none of these.
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// A Call is one attempt: admitted at Start, in flight during
// [Start, Start+Runtime).
type Call struct {
	Start time.Time
	// Runtime is how long the call ran; a negative Runtime counts as 0.
	Runtime time.Duration
	// Cost is what the call counts for in Cost rules; count rules count
	// every call as 1. A Cost below 1, the zero value included, counts as 1;
	// one above 2³¹-1 counts as 2³¹-1.
	Cost    int
	Outcome Outcome
}

// A Pause is an interval [From, To) during which the server paused
// admissions. A Pause with To not after From is not drawn.
type Pause struct {
	From, To time.Time
}

// Options sets the size and title of the picture. The zero value draws a
// 1000×600 picture without a title.
type Options struct {
	// Width and Height are the picture's size in pixels; 0 means 1000
	// and 600. Width must be at least 300 and Height at least 200, and
	// neither more than MaxSize.
	// Height grows when the rules need more room than it leaves them.
	Width, Height int
	// Title is drawn at the top; it may hold any text.
	Title string
}
