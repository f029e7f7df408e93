// Command cookbook is a small, faithful reimplementation of the approach
// of the OpenAI cookbook's api_request_parallel_processor.py, so that
// scripts/bench.sh can set pace beside it on the same server and quota:
//
//	cookbook -items FILE -url 'http://127.0.0.1:PORT/{1}?cost={2}' \
//	    -requests 5 -tokens 100 -per 1s -pause 1.5s
//
// As the cookbook does, it keeps two token buckets, one for requests and
// one for tokens, each holding at most its limit per period (-requests,
// -tokens per -per: the cookbook's max_requests_per_minute and
// max_tokens_per_minute with -per 1m), full at the start and refilled
// continuously. One loop takes the next request (a retry first), refills
// both buckets for the time gone by, and sends the request when both hold
// enough: the request's estimated cost (the second column of its line,
// which here is also its true cost) is taken from the tokens, 1 from the
// requests, and the request goes off in a goroutine of its own, with no
// cap on requests in flight. The loop then sleeps 1 ms, and, if a request
// was refused with 429 less than -pause ago, sleeps until -pause after
// that refusal (the cookbook's seconds_to_pause_after_rate_limit_error,
// 15 s for per-minute limits). A refused or failed request goes back in
// the retry queue until it has been tried -attempts times (the cookbook's
// max_attempts, 5).
//
// Each item is a line "SEQ COST"; the URL template's {1} and {2} are
// replaced by the line's columns. At the end it prints one line:
//
//	succeeded=60 failed=0 rate_limit_errors=3 other_errors=0
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cookbook:", err)
		os.Exit(2)
	}
}

// request is one item on its way: the cookbook's APIRequest.
type request struct {
	url          string
	tokens       float64 // the estimate taken from the token bucket
	attemptsLeft int
}

// tracker is the cookbook's StatusTracker. It is safe for concurrent use.
type tracker struct {
	mu              sync.Mutex
	inProgress      int
	succeeded       int
	failed          int
	rateLimitErrors int
	otherErrors     int
	lastRateLimit   time.Time
	retries         []*request // the retry queue, oldest first
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cookbook", flag.ContinueOnError)
	file := fs.String("items", "", "`file` of lines \"SEQ COST\"")
	tmpl := fs.String("url", "", "URL template: {1} is SEQ, {2} is COST")
	maxRequests := fs.Float64("requests", 0, "requests allowed per period")
	maxTokens := fs.Float64("tokens", 0, "tokens allowed per period")
	per := fs.Duration("per", time.Minute, "the period of -requests and -tokens")
	pause := fs.Duration("pause", 15*time.Second, "pause after a 429 before sending again")
	attempts := fs.Int("attempts", 5, "tries per request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || *tmpl == "" || *maxRequests <= 0 || *maxTokens <= 0 || *per <= 0 || *attempts < 1 {
		return errors.New("want -items, -url, -requests, -tokens, a positive -per and -attempts")
	}
	reqs, err := readItems(*file, *tmpl, *attempts)
	if err != nil {
		return err
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}} // aiohttp's pool
	st := &tracker{}
	var wg sync.WaitGroup
	requestCapacity, tokenCapacity := *maxRequests, *maxTokens
	lastUpdate := time.Now()
	var next *request
	for {
		// Get the next request, if one is not already waiting for capacity.
		st.mu.Lock()
		if next == nil {
			if len(st.retries) > 0 {
				next, st.retries = st.retries[0], st.retries[1:]
			} else if len(reqs) > 0 {
				next, reqs = reqs[0], reqs[1:]
				st.inProgress++
			}
		}
		st.mu.Unlock()

		// Refill the buckets for the time gone by.
		now := time.Now()
		elapsed := now.Sub(lastUpdate).Seconds() / per.Seconds()
		requestCapacity = min(requestCapacity+*maxRequests*elapsed, *maxRequests)
		tokenCapacity = min(tokenCapacity+*maxTokens*elapsed, *maxTokens)
		lastUpdate = now

		// Send it if both buckets hold enough.
		if next != nil && requestCapacity >= 1 && tokenCapacity >= next.tokens {
			requestCapacity--
			tokenCapacity -= next.tokens
			next.attemptsLeft--
			r := next
			wg.Go(func() { call(client, r, st) })
			next = nil
		}

		st.mu.Lock()
		done := st.inProgress == 0 && len(reqs) == 0
		last := st.lastRateLimit
		st.mu.Unlock()
		if done {
			break
		}
		time.Sleep(time.Millisecond)
		// Cool down after a rate-limit error.
		if since := time.Since(last); !last.IsZero() && since < *pause {
			time.Sleep(*pause - since)
		}
	}
	wg.Wait()
	_, err = fmt.Fprintf(out, "succeeded=%d failed=%d rate_limit_errors=%d other_errors=%d\n",
		st.succeeded, st.failed, st.rateLimitErrors, st.otherErrors)
	return err
}

// call sends r once and records the outcome: the cookbook's call_api.
func call(client *http.Client, r *request, st *tracker) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	status, err := get(ctx, client, r.url)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err == nil && status == http.StatusOK {
		st.inProgress--
		st.succeeded++
		return
	}
	if status == http.StatusTooManyRequests {
		st.lastRateLimit = time.Now()
		st.rateLimitErrors++
	} else {
		st.otherErrors++
	}
	if r.attemptsLeft > 0 {
		st.retries = append(st.retries, r)
		return
	}
	st.inProgress--
	st.failed++
}

// get fetches url and returns the status, the body read whole.
func get(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// readItems reads lines "SEQ COST" into requests.
func readItems(file, tmpl string, attempts int) ([]*request, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var reqs []*request
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"SEQ COST\"", file, line)
		}
		cost, err := strconv.Atoi(fields[1])
		if err != nil || cost < 1 {
			return nil, fmt.Errorf("%s:%d: cost %q: want a whole number of at least 1", file, line, fields[1])
		}
		url := strings.NewReplacer("{1}", fields[0], "{2}", fields[1]).Replace(tmpl)
		reqs = append(reqs, &request{url: url, tokens: float64(cost), attemptsLeft: attempts})
	}
	return reqs, sc.Err()
}
