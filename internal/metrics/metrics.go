// Package metrics serves the Prometheus metrics of a pace run while it
// goes (--metrics-addr): calls admitted, their outcomes, per rule the waits
// and the usage, calls in flight, server pauses, the margin, and the
// traffic with a shared store. It reads a snapshot of the run at every
// scrape, so its values are the ones the final summary reports.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Snapshot is the state of a run at one instant.
type Snapshot struct {
	// Admitted counts calls admitted by the rules, retries included.
	Admitted int64
	// OK, Failed and Retried count items as the summary does: done, failed
	// for good, and tried more than once.
	OK, Failed, Retried int64
	// NotStarted counts admitted attempts that could not start for lack
	// of pace's own resources.
	NotStarted int64
	// InFlight is the jobs running now.
	InFlight int
	// Rules are the rules' states, in the order given.
	Rules []Rule
	// Pauses counts the server's pauses; PauseSeconds is how long
	// admissions waited on them.
	Pauses       int64
	PauseSeconds float64
	// MarginSeconds is the margin every window is widened by now.
	MarginSeconds float64
	// Store names a shared backend's store ("redis", "local"), empty for
	// none; RoundTrips and Failures count the calls to it.
	Store                string
	RoundTrips, Failures int64
}

// Rule is one rule's state.
type Rule struct {
	Rule        string  // as pace writes it: "5/s", "cost:100/s"
	Usage       float64 // weight in the window now, as a fraction of N
	PeakUsage   float64
	Waits       int64
	WaitSeconds float64
}

// A family is one metric's help, type and samples, as the Prometheus text
// format (version 0.0.4) writes them.
type family struct {
	name, help, typ string
	label           string // the samples' one label's name, if any
	samples         []sample
}

type sample struct {
	label string // the label's value
	v     float64
}

// families returns the metrics of s. A metric without samples (the store's
// when there is none) is left out, as Prometheus's own client does.
func families(s Snapshot) []family {
	one := func(v float64) []sample { return []sample{{v: v}} }
	var usage, peak, waits, waitTime []sample
	for _, r := range s.Rules {
		usage = append(usage, sample{r.Rule, r.Usage})
		peak = append(peak, sample{r.Rule, r.PeakUsage})
		waits = append(waits, sample{r.Rule, float64(r.Waits)})
		waitTime = append(waitTime, sample{r.Rule, r.WaitSeconds})
	}
	var roundTrips, failures []sample
	if s.Store != "" {
		roundTrips = []sample{{s.Store, float64(s.RoundTrips)}}
		failures = []sample{{s.Store, float64(s.Failures)}}
	}
	const counter, gauge = "counter", "gauge"
	return []family{
		{"pace_calls_admitted_total", "Calls admitted by the rules, retries included.", counter, "", one(float64(s.Admitted))},
		{"pace_calls_total", "Items by outcome, as the summary counts them: ok; failed (for good); retried (tried more than once).", counter, "outcome",
			[]sample{{"ok", float64(s.OK)}, {"failed", float64(s.Failed)}, {"retried", float64(s.Retried)}}},
		{"pace_calls_not_started_total", "Admitted attempts that could not start for lack of pace's own resources (tried again).", counter, "", one(float64(s.NotStarted))},
		{"pace_in_flight", "Jobs running now.", gauge, "", one(float64(s.InFlight))},
		{"pace_rule_usage_ratio", "What a rule's window holds now, as a fraction of its limit.", gauge, "rule", usage},
		{"pace_rule_peak_usage_ratio", "The most a rule's window held so far, as a fraction of its limit.", gauge, "rule", peak},
		{"pace_rule_waits_total", "Admissions that waited on a rule.", counter, "rule", waits},
		{"pace_rule_wait_seconds_total", "Time admissions waited on a rule.", counter, "rule", waitTime},
		{"pace_server_pauses_total", "Times the server paused admissions (429, 503, spent rate-limit quota).", counter, "", one(float64(s.Pauses))},
		{"pace_server_pause_seconds_total", "Time admissions waited on the server's pauses.", counter, "", one(s.PauseSeconds)},
		{"pace_margin_seconds", "The margin every rule's window is widened by now.", gauge, "", one(s.MarginSeconds)},
		{"pace_store_round_trips_total", "Calls to a shared quota's store.", counter, "store", roundTrips},
		{"pace_store_failures_total", "Calls to a shared quota's store that got no usable answer.", counter, "store", failures},
	}
}

// contentType is the Prometheus text format's.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// writeText writes s in the Prometheus text format.
func writeText(w io.Writer, s Snapshot) error {
	b := make([]byte, 0, 4<<10)
	help := strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	value := strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	for _, f := range families(s) {
		if len(f.samples) == 0 {
			continue
		}
		b = fmt.Appendf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, help.Replace(f.help), f.name, f.typ)
		for _, x := range f.samples {
			b = append(b, f.name...)
			if f.label != "" {
				b = fmt.Appendf(b, `{%s="%s"}`, f.label, value.Replace(x.label))
			}
			b = append(b, ' ')
			b = appendFloat(b, x.v)
			b = append(b, '\n')
		}
	}
	_, err := w.Write(b)
	return err
}

// appendFloat appends v as Prometheus writes sample values.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// CheckAddr refuses an address that would serve beyond this machine by
// accident: one without a host (":9090" listens on every interface). A
// host given explicitly, loopback or not, is the user's choice.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("want HOST:PORT, such as 127.0.0.1:9090")
	}
	if host == "" {
		return fmt.Errorf("no host, so it would serve on every interface: give one, such as 127.0.0.1:%s (this machine only) or 0.0.0.0:%s (every interface, on purpose)", port, port)
	}
	return nil
}

// Server serves metrics on /metrics until Close.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error

	closeOnce sync.Once
	closeErr  error
}

// Serve starts serving the metrics snap returns on addr (see CheckAddr),
// on /metrics, and returns once it listens.
func Serve(addr string, snap func() Snapshot) (*Server, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		writeText(w, snap())
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting scrapes under way finish for a moment.
// Calls after the first return its result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		s.closeErr = err
	})
	return s.closeErr
}
