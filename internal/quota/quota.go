// Package quota is what pace quota shows of a shared quota, from either
// store (the local store's Quota or Redis's): one View, written for a
// reader or as JSON. It only describes; reading and resetting a quota are
// the stores' own (localstore.Inspect, redisrate.Inspect, Reset).
package quota

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// View is what pace quota show prints of one quota, from either
// store; it is also its JSON form.
type View struct {
	Key        string     `json:"key"`
	Store      string     `json:"store"` // "local" or "redis"
	Path       string     `json:"path,omitempty"`
	URL        string     `json:"url,omitempty"` // redacted
	Spec       string     `json:"spec"`
	Idle       bool       `json:"idle"` // every call has left its window
	Now        time.Time  `json:"now"`
	Next       time.Time  `json:"next"`
	NextIn     float64    `json:"next_in_seconds"`
	Rules      []RuleView `json:"rules"`
	GlobalJobs int        `json:"global_jobs"`
	Slots      []SlotView `json:"slots"`
}

// RuleView is one rule of a View: how much of its window is used now.
type RuleView struct {
	Rule    string  `json:"rule"`
	N       int     `json:"n"`
	Window  float64 `json:"window_seconds"`
	Cost    bool    `json:"cost"`
	Counter bool    `json:"counter"`
	Used    int     `json:"used"`
	Usage   float64 `json:"usage"`
}

// SlotView is a slot of the local store (Slot, PID, Started, Since)
// or a lease of Redis (Lease, Holder, Expires).
type SlotView struct {
	Slot    *int       `json:"slot,omitempty"`
	PID     int        `json:"pid,omitempty"`
	Started *time.Time `json:"started,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
	Lease   string     `json:"lease,omitempty"`
	Holder  string     `json:"holder,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
	Alive   bool       `json:"alive"`
}

// ruleViews returns the views of a quota's rules.
func ruleViews(us []throttle.RuleStats) []RuleView {
	views := make([]RuleView, 0, len(us))
	for _, u := range us {
		r := u.Rule
		views = append(views, RuleView{Rule: r.String(), N: r.N, Window: r.Window.Seconds(), Cost: r.Cost,
			Counter: u.Counter, Used: u.Used, Usage: u.Usage})
	}
	return views
}

// FromLocal returns the view of a quota of the local store.
func FromLocal(q *localstore.Quota) View {
	v := View{Key: q.Key, Store: "local", Path: q.Path, Spec: q.Spec, Idle: q.Expired, Now: q.Now, Next: q.Next,
		NextIn: max(0, q.Next.Sub(q.Now).Seconds()), GlobalJobs: q.GlobalJobs, Slots: []SlotView{}}
	v.Rules = ruleViews(q.Rules)
	for _, s := range q.Slots {
		sv := SlotView{Slot: &s.Index, PID: s.PID, Alive: s.Alive}
		if !s.Started.IsZero() {
			sv.Started = &s.Started
		}
		if !s.Since.IsZero() {
			sv.Since = &s.Since
		}
		v.Slots = append(v.Slots, sv)
	}
	return v
}

// FromRedis returns the view of a quota kept in Redis; url is the
// store's URL, redacted.
func FromRedis(q *redisrate.Quota, url string) View {
	v := View{Key: q.Key, Store: "redis", URL: url, Spec: q.Spec, Idle: q.Expired, Now: q.Now, Next: q.Next,
		NextIn: max(0, q.Next.Sub(q.Now).Seconds()), GlobalJobs: q.GlobalJobs, Slots: []SlotView{}}
	v.Rules = ruleViews(q.Rules)
	for _, l := range q.Leases {
		v.Slots = append(v.Slots, SlotView{Lease: l.ID, Holder: l.Holder, Expires: &l.Expires, Alive: true})
	}
	return v
}

// WriteText writes v for a reader.
func (v *View) WriteText(w io.Writer) {
	where := v.Path
	if v.Store == "redis" {
		where = v.URL
	}
	key := v.Key
	if strings.IndexFunc(key, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || !utf8.ValidString(key) {
		key = strconv.Quote(key) // a name from elsewhere (an older pace) sends nothing to the terminal
	}
	fmt.Fprintf(w, "quota %s (%s %s)\n", key, v.Store, where)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch {
	case v.Spec == "":
		fmt.Fprintf(tw, "  rules\tnone recorded: no call in any window\n")
	case v.Idle:
		fmt.Fprintf(tw, "  rules\t%s (idle: every call has left its window, other rules may take the quota over)\n", v.Spec)
	default:
		fmt.Fprintf(tw, "  rules\t%s\n", v.Spec)
	}
	for _, r := range v.Rules {
		kept := ""
		if r.Counter {
			kept = "\t(counter)"
		}
		fmt.Fprintf(tw, "  rule %s\t%d/%d used\t%.0f%%%s\n", r.Rule, r.Used, r.N, r.Usage*100, kept)
	}
	if len(v.Rules) > 0 {
		if d := v.Next.Sub(v.Now); d > 0 {
			fmt.Fprintf(tw, "  next call\tin %s (%s)\n", human.Duration(d), v.Next.Local().Format("15:04:05.000"))
		} else {
			fmt.Fprintf(tw, "  next call\tnow\n")
		}
	}
	if v.GlobalJobs > 0 || len(v.Slots) > 0 {
		held := 0
		for _, s := range v.Slots {
			if s.Alive {
				held++
			}
		}
		if v.GlobalJobs > 0 {
			fmt.Fprintf(tw, "  slots\t%d of %d held\n", held, v.GlobalJobs)
		} else {
			fmt.Fprintf(tw, "  slots\t%d held\n", held)
		}
	}
	for _, s := range v.Slots {
		if s.Slot != nil {
			fmt.Fprintf(tw, "  slot %d\t%s\n", *s.Slot, s.localText(v.Now))
		} else {
			fmt.Fprintf(tw, "  lease %s\tprocess %s, expires in %s unless renewed\n", s.Lease, s.Holder, human.Duration(s.Expires.Sub(v.Now)))
		}
	}
	tw.Flush()
}

// localText describes a slot of the local store at now.
func (s SlotView) localText(now time.Time) string {
	who := "holder unknown"
	if s.PID != 0 {
		who = fmt.Sprintf("pid %d", s.PID)
	}
	if s.Since != nil {
		who += fmt.Sprintf(", since %s (%s ago)", s.Since.Local().Format("15:04:05"), human.Duration(now.Sub(*s.Since)))
	}
	if s.Alive {
		return who + ", alive"
	}
	return who + ", dead: free"
}

// Write writes views as text, or as JSON: an array when list,
// else the one object.
func Write(w io.Writer, views []View, asJSON, list bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if list {
			return enc.Encode(views)
		}
		if len(views) == 0 {
			return nil
		}
		return enc.Encode(views[0])
	}
	var b strings.Builder
	for i := range views {
		if i > 0 {
			b.WriteString("\n")
		}
		views[i].WriteText(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteReset writes, as one line of JSON, that the quota v names (its
// key, store, and path or URL) has been reset.
func WriteReset(w io.Writer, v View) error {
	b, err := json.Marshal(struct {
		Key   string `json:"key"`
		Store string `json:"store"`
		Path  string `json:"path,omitempty"`
		URL   string `json:"url,omitempty"`
		Reset bool   `json:"reset"`
	}{v.Key, v.Store, v.Path, v.URL, true})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
