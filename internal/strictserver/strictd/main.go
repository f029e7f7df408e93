// Command strictd runs a strictserver on loopback for benchmark scripts.
//
//	strictd -rules 5/s,12/3s [-addr 127.0.0.1:0] [-portfile FILE] [-delay 10ms] [-calls FILE] [-requests FILE]
//
// It writes the port it listens on to FILE (atomically, with a newline),
// serves GET /stats as JSON without counting it as an arrival, and on
// SIGINT or SIGTERM writes the accepted arrivals to the -calls file (one
// line "UNIXNANO COST" each, in arrival order) and every request to the
// -requests file (one line "UNIXNANO OUTCOME PATH" each, in arrival order;
// OUTCOME is accepted, refused or reset), prints the same JSON as one
// line to stdout and exits 0:
//
//	{"accepted":30,"refused":0,"reset":0,"first":1700000000000000000,
//	 "last":1700000007000000000,"makespan":7,"makespan_ns":7000000000}
//
// first and last are accepted arrivals in Unix nanoseconds (0 without
// any), makespan is last-first in seconds.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pace-cli/pace/internal/outfile"
	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/throttle"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "strictd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("strictd", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "loopback `host:port` to listen on")
	spec := fs.String("rules", "", "rules to enforce, such as 5/s,12/3s (none: accept all)")
	portfile := fs.String("portfile", "", "write the chosen port to `file`")
	delay := fs.Duration("delay", 0, "hold each accepted request this long")
	retryAfter := fs.Bool("retry-after", false, "send Retry-After with a refusal: the seconds until a request would be admissible")
	policy := fs.Bool("policy", false, "publish the rules in a RateLimit-Policy header")
	costParam := fs.String("cost-param", "", "query `parameter` carrying each request's cost, for cost rules (cost:100/s); answers are then JSON with usage.total_tokens")
	usage := fs.Float64("usage-factor", 0, "report usage.total_tokens as the cost times `F` (a true cost other than the estimate)")
	calls := fs.String("calls", "", "on exit, write the accepted arrivals to `file`: lines \"UNIXNANO COST\" in arrival order")
	requests := fs.String("requests", "", "on exit, write every request to `file`: lines \"UNIXNANO OUTCOME PATH\" in arrival order (OUTCOME: accepted, refused, reset)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rules, err := throttle.ParseRules(*spec)
	if err != nil {
		return err
	}
	srv, err := strictserver.New(strictserver.Options{Rules: rules, Delay: *delay, RuleRetryAfter: *retryAfter,
		Policy: *policy, CostParam: *costParam, UsageFactor: *usage, Record: *requests != ""})
	if err != nil {
		return err
	}
	if err := checkLoopback(*addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() { // "localhost" resolved elsewhere
		ln.Close()
		return errors.New("-addr must be a loopback address, got " + ln.Addr().String())
	}
	if *portfile != "" {
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		if err := writeAtomic(*portfile, port+"\n"); err != nil {
			ln.Close()
			return err
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(statsJSON(srv.Stats()))
	})
	mux.Handle("/", srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		hs.Close()
	}
	if *calls != "" {
		var b strings.Builder
		for _, c := range srv.Calls() {
			fmt.Fprintf(&b, "%d %d\n", c.At.UnixNano(), c.Cost)
		}
		if err := writeAtomic(*calls, b.String()); err != nil {
			return err
		}
	}
	if *requests != "" {
		var b strings.Builder
		for _, r := range srv.Requests() {
			fmt.Fprintf(&b, "%d %s %s\n", r.At.UnixNano(), r.Outcome, r.Path)
		}
		if err := writeAtomic(*requests, b.String()); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(statsJSON(srv.Stats()))
}

// stats is the JSON form of strictserver.Stats.
type stats struct {
	Accepted   int64   `json:"accepted"`
	Refused    int64   `json:"refused"`
	Reset      int64   `json:"reset"`
	First      int64   `json:"first"`
	Last       int64   `json:"last"`
	Makespan   float64 `json:"makespan"`
	MakespanNS int64   `json:"makespan_ns"`
}

func statsJSON(s strictserver.Stats) stats {
	out := stats{Accepted: s.Accepted, Refused: s.Refused, Reset: s.Reset}
	if s.Accepted > 0 {
		// From the wall-clock nanos, not s.Makespan (monotonic), so that
		// makespan_ns == last - first exactly.
		out.First, out.Last = s.First.UnixNano(), s.Last.UnixNano()
		out.MakespanNS = out.Last - out.First
		out.Makespan = time.Duration(out.MakespanNS).Seconds()
	}
	return out
}

// checkLoopback refuses addresses that are not loopback, so a benchmark
// server is never reachable from the network.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("-addr must be a loopback address such as 127.0.0.1:0 or [::1]:0, got " + strconv.Quote(addr))
	}
	return nil
}

// writeAtomic writes data to path whole, through a temporary file and a
// rename, so a script polling for path never reads it half written; onto
// a device or a FIFO (-calls /dev/null) it writes directly, never
// replacing it (outfile.WriteFile).
func writeAtomic(path, data string) error {
	return outfile.WriteFile(context.Background(), path, []byte(data))
}
