package pacehttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// An http.Client under a rule looser than the server's: the server keeps
// 5 calls a second and answers 429 with Retry-After past them; the client
// was told 20 a second. The transport pauses on the first refusals,
// learns the server's rule from them, and slows to it, as pace fetch
// does.
func Example() {
	srv, _ := strictserver.New(strictserver.Options{
		Rules:      []throttle.Rule{{N: 5, Window: time.Second}},
		RetryAfter: time.Second,
	})
	ts := httptest.NewServer(srv)
	defer ts.Close()

	lim, _ := throttle.New(throttle.Options{Rules: []throttle.Rule{{N: 20, Window: time.Second}}})
	tr := pacehttp.New(lim, pacehttp.Options{Learn: true})
	client := &http.Client{Transport: tr}

	ok := 0
	for range 20 {
		resp, err := client.Get(ts.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close() // gives the admission back
		if resp.StatusCode == http.StatusOK {
			ok++
		}
	}
	rules, report := tr.Learned()
	fmt.Println("refused at first:", report.Refusals > 0)
	// The server's own 5/s on a quiet machine (throttle.FormatRules(rules)
	// says "5/s"); on a loaded one, where the calls that were refused came
	// late, the refusals can also fit a stricter rule, such as 4/s.
	fmt.Println("learned a rule, no looser than 5/s:", noLooser(rules, 5))
	fmt.Println("refused in all, at most:", 20-ok <= 5)
	// Output:
	// refused at first: true
	// learned a rule, no looser than 5/s: true
	// refused in all, at most: true
}

// noLooser reports whether rules hold at least one rule and none lets
// more than perSecond calls a second through over its window.
func noLooser(rules []throttle.Rule, perSecond float64) bool {
	for _, r := range rules {
		if float64(r.N)/r.Window.Seconds() > perSecond {
			return false
		}
	}
	return len(rules) > 0
}

// A redirect that the http.Client follows reaches the server as a call of
// its own, so the Transport admits it under the rules too: one Get, two
// calls counted.
func Example_redirect() {
	mux := http.NewServeMux()
	mux.Handle("/old", http.RedirectHandler("/new", http.StatusFound))
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "here") })
	ts := httptest.NewServer(mux)
	defer ts.Close()

	lim, _ := throttle.New(throttle.Options{Rules: []throttle.Rule{{N: 10, Window: time.Second}}})
	client := &http.Client{Transport: pacehttp.New(lim, pacehttp.Options{})}
	resp, err := client.Get(ts.URL + "/old")
	if err != nil {
		fmt.Println(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Request.URL.Path, "after", lim.Stats().Admitted, "calls")
	// Output:
	// /new after 2 calls
}
