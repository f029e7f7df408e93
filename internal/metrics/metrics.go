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
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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

// collector reads a Snapshot at every scrape.
type collector struct {
	snap func() Snapshot

	admitted, calls, notStarted, inFlight        *prometheus.Desc
	ruleUsage, rulePeak, ruleWaits, ruleWaitTime *prometheus.Desc
	pauses, pauseTime, margin                    *prometheus.Desc
	roundTrips, failures                         *prometheus.Desc
}

func newCollector(snap func() Snapshot) *collector {
	d := prometheus.NewDesc
	return &collector{
		snap:         snap,
		admitted:     d("pace_calls_admitted_total", "Calls admitted by the rules, retries included.", nil, nil),
		calls:        d("pace_calls_total", "Items by outcome, as the summary counts them: ok; failed (for good); retried (tried more than once).", []string{"outcome"}, nil),
		notStarted:   d("pace_calls_not_started_total", "Admitted attempts that could not start for lack of pace's own resources (tried again).", nil, nil),
		inFlight:     d("pace_in_flight", "Jobs running now.", nil, nil),
		ruleUsage:    d("pace_rule_usage_ratio", "What a rule's window holds now, as a fraction of its limit.", []string{"rule"}, nil),
		rulePeak:     d("pace_rule_peak_usage_ratio", "The most a rule's window held so far, as a fraction of its limit.", []string{"rule"}, nil),
		ruleWaits:    d("pace_rule_waits_total", "Admissions that waited on a rule.", []string{"rule"}, nil),
		ruleWaitTime: d("pace_rule_wait_seconds_total", "Time admissions waited on a rule.", []string{"rule"}, nil),
		pauses:       d("pace_server_pauses_total", "Times the server paused admissions (429, 503, spent rate-limit quota).", nil, nil),
		pauseTime:    d("pace_server_pause_seconds_total", "Time admissions waited on the server's pauses.", nil, nil),
		margin:       d("pace_margin_seconds", "The margin every rule's window is widened by now.", nil, nil),
		roundTrips:   d("pace_store_round_trips_total", "Calls to a shared quota's store.", []string{"store"}, nil),
		failures:     d("pace_store_failures_total", "Calls to a shared quota's store that got no usable answer.", []string{"store"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.admitted, c.calls, c.notStarted, c.inFlight, c.ruleUsage, c.rulePeak,
		c.ruleWaits, c.ruleWaitTime, c.pauses, c.pauseTime, c.margin, c.roundTrips, c.failures} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.snap()
	m := prometheus.MustNewConstMetric
	ch <- m(c.admitted, prometheus.CounterValue, float64(s.Admitted))
	ch <- m(c.calls, prometheus.CounterValue, float64(s.OK), "ok")
	ch <- m(c.calls, prometheus.CounterValue, float64(s.Failed), "failed")
	ch <- m(c.calls, prometheus.CounterValue, float64(s.Retried), "retried")
	ch <- m(c.notStarted, prometheus.CounterValue, float64(s.NotStarted))
	ch <- m(c.inFlight, prometheus.GaugeValue, float64(s.InFlight))
	for _, r := range s.Rules {
		ch <- m(c.ruleUsage, prometheus.GaugeValue, r.Usage, r.Rule)
		ch <- m(c.rulePeak, prometheus.GaugeValue, r.PeakUsage, r.Rule)
		ch <- m(c.ruleWaits, prometheus.CounterValue, float64(r.Waits), r.Rule)
		ch <- m(c.ruleWaitTime, prometheus.CounterValue, r.WaitSeconds, r.Rule)
	}
	ch <- m(c.pauses, prometheus.CounterValue, float64(s.Pauses))
	ch <- m(c.pauseTime, prometheus.CounterValue, s.PauseSeconds)
	ch <- m(c.margin, prometheus.GaugeValue, s.MarginSeconds)
	if s.Store != "" {
		ch <- m(c.roundTrips, prometheus.CounterValue, float64(s.RoundTrips), s.Store)
		ch <- m(c.failures, prometheus.CounterValue, float64(s.Failures), s.Store)
	}
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s, err := serve(ln, snap, serverLimits)
	if err != nil {
		ln.Close()
	}
	return s, err
}

// limits bound what clients of the metrics server can hold of pace's: a
// scrape is one small request and a response of a few KiB.
type limits struct {
	// conns is the most connections open at once (each a descriptor).
	conns int
	// idle closes a kept-alive connection that sends no new request.
	idle time.Duration
	// read and write bound the time to read a request (headers and
	// body) and to write its response (a client that does not read).
	read, write time.Duration
	// headerBytes bounds a request's headers.
	headerBytes int
}

// serverLimits are Serve's: a few scrapers at once (Prometheus keeps one
// connection per target), each told off after 10 s of silence or
// stalling.
var serverLimits = limits{conns: 8, idle: 30 * time.Second, read: 10 * time.Second, write: 10 * time.Second,
	headerBytes: 8 << 10}

// serve serves the metrics snap returns on ln within lim.
func serve(ln net.Listener, snap func() Snapshot, lim limits) (*Server, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(newCollector(snap)); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	lln := newLimitListener(ln, lim.conns)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: lim.read, ReadTimeout: lim.read, WriteTimeout: lim.write,
		IdleTimeout: lim.idle, MaxHeaderBytes: lim.headerBytes,
		// net/http's complaints (an accept that failed) are not pace's
		// lines: they would reach stderr with a timestamp.
		ErrorLog: log.New(io.Discard, "", 0)}
	s := &Server{srv: srv, ln: lln, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(lln) }()
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
		if err != nil {
			// Scrapes that did not finish in time (a client that does
			// not read) are cut: their connections and goroutines end
			// here, not when the client gives up.
			s.srv.Close()
		}
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		s.closeErr = err
	})
	return s.closeErr
}
