// Command benchtool is scripts/bench.sh's helper: the optima that runs
// are compared with, computed by throttle's oracle, and the benchmark's
// inputs.
//
//	benchtool fastest -rules 5/s,12/3s -n 30 [-jobs 4] [-runtime 0] [-margin 0]
//	benchtool fastest -rules 5/s,cost:100/s -items FILE [-jobs 4] [-margin 0]
//	benchtool items -n 60 -max 60 -seed 13 > FILE
//	benchtool freeport
//	benchtool linksim -to HOST:PORT -delay 20ms -jitter 5ms -portfile FILE
//	benchtool upstream -portfile FILE
//	benchtool lags -requests FILE [-rules 20/s,60/5s] JOBLOG...
//
// fastest prints the makespan in seconds (first to last admission) of the
// fastest legal FIFO schedule (throttle.Plan
// over the costs in the second column of FILE, in file order), then the
// calls, the jobs cap and the total cost. -margin widens every window, as
// a client's margin does: the best a client keeping that margin can do. items writes lines "SEQ COST",
// the costs drawn from 1..max by a PCG seeded with seed: the same file on
// every machine and Go release. freeport prints a free TCP port on
// 127.0.0.1 (never 6379) for a server the script starts. linksim forwards
// connections from a free port on 127.0.0.1 (written to FILE) to HOST:PORT
// through a simulated slow link (internal/linksim), the delay and jitter
// added in each direction, until it is sent SIGTERM or SIGINT. upstream
// serves HTTP on a free port on 127.0.0.1 (written to FILE) until SIGTERM
// or SIGINT: /small answers 64 bytes, /bytes/N answers N bytes made on the
// fly (a gigabyte without storing it), both with a Content-Length. lags
// matches strictd's record of every request with pace fetch's job logs and
// prints the lags from admission to arrival, and what each refusal's
// window held (see lags.go).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pace-cli/pace/internal/linksim"
	"github.com/pace-cli/pace/internal/outfile"

	"github.com/pace-cli/pace/throttle"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("want a subcommand: fastest, items, freeport, linksim, upstream or lags")
	}
	switch args[0] {
	case "fastest":
		return fastest(args[1:], out)
	case "items":
		return items(args[1:], out)
	case "freeport":
		return freeport(out)
	case "linksim":
		return linkSim(args[1:])
	case "upstream":
		return upstream(args[1:])
	case "lags":
		return lags(args[1:], out)
	}
	return fmt.Errorf("unknown subcommand %q: want fastest, items, freeport, linksim, upstream or lags", args[0])
}

// fastest prints the makespan of the fastest legal FIFO schedule.
func fastest(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("fastest", flag.ContinueOnError)
	spec := fs.String("rules", "", "rules, such as 5/s,12/3s or 5/s,cost:100/s")
	n := fs.Int("n", 0, "calls of cost 1")
	file := fs.String("items", "", "`file` of lines \"SEQ COST\": one call per line, in order")
	jobs := fs.Int("jobs", 0, "calls in flight at most (0: no cap)")
	runtime := fs.Duration("runtime", 0, "how long each call holds its slot")
	margin := fs.Duration("margin", 0, "widen every rule's window by this much")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rules, err := throttle.ParseRules(*spec)
	if err != nil {
		return err
	}
	for i := range rules {
		rules[i].Window += max(*margin, 0)
	}
	if _, err := throttle.New(throttle.Options{Rules: rules}); err != nil {
		return err // a rule no limiter can keep
	}
	costs := make([]int, *n)
	for i := range costs {
		costs[i] = 1
	}
	if *file != "" {
		if costs, err = readCosts(*file); err != nil {
			return err
		}
	}
	if len(costs) == 0 {
		return errors.New("fastest: want -n N or -items FILE")
	}
	total := 0
	for _, c := range costs {
		if c < 1 || (throttle.MaxCost(rules) > 0 && c > throttle.MaxCost(rules)) {
			return fmt.Errorf("fastest: cost %d cannot be admitted under %s", c, *spec)
		}
		total += c
	}
	t0 := time.Unix(0, 0)
	at := throttle.Plan(rules, nil, costs, t0, *jobs, *runtime)
	_, err = fmt.Fprintf(out, "%.4f %d %d %d\n", at[len(at)-1].Sub(t0).Seconds(), len(costs), *jobs, total)
	return err
}

// readCosts reads the second column of file's lines.
func readCosts(file string) ([]int, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var costs []int
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: want \"SEQ COST\"", file, line)
		}
		c, err := strconv.Atoi(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: cost %q: want a whole number", file, line, fields[1])
		}
		costs = append(costs, c)
	}
	return costs, sc.Err()
}

// items writes n lines "SEQ COST" with pseudo-random costs in 1..max.
func items(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("items", flag.ContinueOnError)
	n := fs.Int("n", 60, "items")
	hi := fs.Int("max", 60, "largest cost")
	seed := fs.Uint64("seed", 13, "PCG seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *hi < 1 {
		return errors.New("items: want -n and -max of at least 1")
	}
	r := rand.New(rand.NewPCG(*seed, 0))
	w := bufio.NewWriter(out)
	for i := 1; i <= *n; i++ {
		fmt.Fprintf(w, "%d %d\n", i, 1+r.IntN(*hi))
	}
	return w.Flush()
}

// freeport prints a TCP port that was free on 127.0.0.1 a moment ago.
func freeport(out io.Writer) error {
	for range 10 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if port != 6379 {
			_, err = fmt.Fprintln(out, port)
			return err
		}
	}
	return errors.New("freeport: no port other than 6379")
}

// linkSim runs a link simulator until SIGTERM or SIGINT.
func linkSim(args []string) error {
	fs := flag.NewFlagSet("linksim", flag.ContinueOnError)
	to := fs.String("to", "", "`address` to forward to, such as 127.0.0.1:6380")
	delay := fs.Duration("delay", 0, "one-way delay, each direction")
	jitter := fs.Duration("jitter", 0, "each chunk's delay varies by up to ± this much")
	portfile := fs.String("portfile", "", "`file` to write the port listened on to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" || *portfile == "" {
		return errors.New("linksim: want -to and -portfile")
	}
	l := linksim.Link{Delay: *delay, Jitter: *jitter}
	p, err := linksim.Listen("127.0.0.1:0", *to, l, l)
	if err != nil {
		return err
	}
	defer p.Close()
	_, port, _ := net.SplitHostPort(p.Addr())
	if err := outfile.WriteFile(context.Background(), *portfile, []byte(port+"\n")); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}

// upstream serves /small and /bytes/N until SIGTERM or SIGINT.
func upstream(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	portfile := fs.String("portfile", "", "`file` to write the port listened on to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *portfile == "" {
		return errors.New("upstream: want -portfile")
	}
	small := []byte(strings.Repeat("x", 63) + "\n")
	chunk := []byte(strings.Repeat("0123456789abcdef", 4096)) // 64 KiB
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "64")
		w.Write(small)
	})
	mux.HandleFunc("/bytes/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.PathValue("n"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "want /bytes/N", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		for n > 0 {
			k := min(n, int64(len(chunk)))
			if _, err := w.Write(chunk[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := outfile.WriteFile(context.Background(), *portfile, []byte(port+"\n")); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}
