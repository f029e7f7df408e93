package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/throttle"
)

// request is one line of strictd's -requests file.
type request struct {
	at       time.Time
	outcome  string
	path     string
	admitted time.Time // from a job log's row for the same path; zero if none
	log      string    // that job log's file name
}

// lags matches the server's record of every request (strictd -requests)
// with the admissions the job logs hold, by path (the k-th request for a
// path with the k-th row for it, in time order), and prints the lag from
// admission to arrival: "lags N MIN P50 MAX" in milliseconds over the
// requests matched. For each count rule of -rules it prints "slack RULE
// MS": how much later than a window after the Nth accepted arrival before
// it the closest accepted arrival came (negative: a refusal's worth). For
// every refused request it then prints, per rule of
// -rules whose window at the refusal held N accepted arrivals, the Nth
// latest of them (the one the refused request had to come a window
// after), both admissions and both lags: what the margin had to cover.
// Admission and arrival are compared directly, so they must be on one
// clock (the bench runs pace, Redis and strictd on one machine).
func lags(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("lags", flag.ContinueOnError)
	reqFile := fs.String("requests", "", "strictd's -requests `file`")
	spec := fs.String("rules", "", "the server's rules, to explain refusals (optional)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *reqFile == "" || fs.NArg() == 0 {
		return errors.New("lags: want -requests FILE and one or more job logs")
	}
	rules, err := throttle.ParseRules(*spec)
	if err != nil {
		return err
	}
	reqs, err := readRequests(*reqFile)
	if err != nil {
		return err
	}
	byPath := map[string][]int{} // request indices, in arrival order
	for i, r := range reqs {
		byPath[r.path] = append(byPath[r.path], i)
	}
	for _, name := range fs.Args() {
		rows, err := readAdmissions(name)
		if err != nil {
			return err
		}
		for path, starts := range rows {
			for k, i := range byPath[path] {
				if k < len(starts) {
					reqs[i].admitted, reqs[i].log = starts[k], name
				}
			}
		}
	}
	var ls []time.Duration
	for _, r := range reqs {
		if !r.admitted.IsZero() {
			ls = append(ls, r.at.Sub(r.admitted))
		}
	}
	if len(ls) == 0 {
		return errors.New("lags: no request matches a job log's row")
	}
	slices.Sort(ls)
	fmt.Fprintf(out, "lags %d %s %s %s\n", len(ls), ms(ls[0]), ms(ls[len(ls)/2]), ms(ls[len(ls)-1]))
	// How close the run came to a refusal: the least, over the accepted
	// arrivals, of how much later than a window after the arrival N before
	// it each came (negative: the server would have refused it).
	var accepted []time.Time
	for _, r := range reqs {
		if r.outcome == "accepted" {
			accepted = append(accepted, r.at)
		}
	}
	slices.SortFunc(accepted, func(a, b time.Time) int { return a.Compare(b) })
	for _, rule := range rules {
		if rule.Cost || len(accepted) <= rule.N {
			continue
		}
		least := time.Duration(1<<63 - 1)
		for i := rule.N; i < len(accepted); i++ {
			least = min(least, accepted[i].Sub(accepted[i-rule.N])-rule.Window)
		}
		fmt.Fprintf(out, "slack %s %s\n", rule, ms(least))
	}
	for i, b := range reqs {
		if b.outcome != "refused" {
			continue
		}
		fmt.Fprintf(out, "refused %s arrived %d admitted %s lag %s ms (%s)\n", b.path, b.at.UnixNano(), unixOrNone(b.admitted), lagOrNone(b), b.log)
		for _, rule := range rules {
			var in []request // accepted arrivals in (b.at-W, b.at]
			for _, a := range reqs[:i] {
				if a.outcome == "accepted" && a.at.After(b.at.Add(-rule.Window)) {
					in = append(in, a)
				}
			}
			if len(in) < rule.N {
				continue
			}
			a := in[len(in)-rule.N] // the arrival B needed to be a window after
			fmt.Fprintf(out, "  %s: %d accepted in the window; %d back, %s arrived %d admitted %s lag %s ms (%s)",
				rule, len(in), rule.N, a.path, a.at.UnixNano(), unixOrNone(a.admitted), lagOrNone(a), a.log)
			if !a.admitted.IsZero() && !b.admitted.IsZero() {
				fmt.Fprintf(out, "; admitted %s ms apart", ms(b.admitted.Sub(a.admitted)))
			}
			fmt.Fprintln(out)
		}
	}
	return nil
}

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 1, 64) }

func unixOrNone(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func lagOrNone(r request) string {
	if r.admitted.IsZero() {
		return "-"
	}
	return ms(r.at.Sub(r.admitted))
}

// readRequests reads strictd's -requests file: "UNIXNANO OUTCOME PATH".
func readRequests(name string) ([]request, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var reqs []request
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if len(fields) != 3 || err != nil {
			return nil, fmt.Errorf("%s:%d: %q: want \"UNIXNANO OUTCOME PATH\"", name, line, sc.Text())
		}
		reqs = append(reqs, request{at: time.Unix(0, ns), outcome: fields[1], path: fields[2]})
	}
	return reqs, sc.Err()
}

// readAdmissions reads a pace fetch job log: each path's admissions, in
// time order.
func readAdmissions(name string) (map[string][]time.Time, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	log, err := joblog.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rows := map[string][]time.Time{}
	for _, e := range log.Entries {
		command := e.Command
		if r, ok := e.HopRequest(); ok {
			command = r // a redirect followed, or a request sent again
		}
		_, raw, ok := strings.Cut(command, " ")
		u, err := url.Parse(raw)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: row %d: command %q: want \"METHOD URL\" (a pace fetch job log)", name, e.Seq, e.Command)
		}
		rows[u.RequestURI()] = append(rows[u.RequestURI()], e.Start)
	}
	for _, ts := range rows {
		slices.SortFunc(ts, func(a, b time.Time) int { return cmp.Compare(a.UnixNano(), b.UnixNano()) })
	}
	return rows, nil
}
