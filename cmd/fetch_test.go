package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/throttle"
)

// parseFetch returns the options pace fetch's flags make of args.
func parseFetch(t *testing.T, args ...string) (*FetchOptions, error) {
	t.Helper()
	return parseFlags(t, NewCmdFetch, args...)
}

func TestFetchFlagsToOptions(t *testing.T) {
	o, err := parseFetch(t, "-r", "5/s,12/3s", "-j", "4", "-a", "urls", "--margin", "5ms", "--timeout", "2s",
		"--retries", "1", "-k", "-X", "PUT", "-H", "Authorization: Bearer x, y", "-H", "X-Seq: {#}",
		"-d", "@{}", "--insecure", "-o", "out", "--output-name", "{/}.json", "--ignore-server-limits",
		"https://api.example.com/items/{}")
	if err != nil {
		t.Fatal(err)
	}
	c := o.Common
	if c.Jobs != 4 || c.Input != "urls" || c.Margin != 5*time.Millisecond || c.Timeout != 2*time.Second ||
		c.Retries != 1 || !c.KeepOrder || len(c.Rules) != 2 {
		t.Errorf("common options = %+v", c)
	}
	// A comma inside a header value stays in it (-H is not a list).
	if want := []string{"Authorization: Bearer x, y", "X-Seq: {#}"}; !slices.Equal(o.Headers, want) {
		t.Errorf("Headers = %q, want %q", o.Headers, want)
	}
	if o.URL != "https://api.example.com/items/{}" || o.Method != "PUT" || o.Data != "@{}" || !o.HasData ||
		!o.Insecure || o.OutputDir != "out" || o.OutputName != "{/}.json" || !o.IgnoreServerLimits {
		t.Errorf("fetch options = %+v", o)
	}
}

func TestFetchDefaults(t *testing.T) {
	o, err := parseFetch(t)
	if err != nil {
		t.Fatal(err)
	}
	if o.Common.Retries != defaultFetchRetries || o.Method != "" || o.HasData || o.URL != "" ||
		o.OutputName != "{#}" || o.Insecure || o.IgnoreServerLimits || o.Common.Input != "-" {
		t.Errorf("defaults = %+v", o)
	}
	// -d '' is data (an empty body), not its absence.
	if o, _ := parseFetch(t, "-d", ""); o == nil || !o.HasData {
		t.Errorf("-d '': HasData = false, want true")
	}
}

func TestFetchFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--output-name", "{}"},          // without -o
		{"https://a/{}", "https://b/{}"}, // two templates
		{"--retries", "-1"},
	} {
		o, err := parseFetch(t, args...)
		if err == nil && o != nil {
			err = o.Common.check()
		}
		var fe *FlagError
		if !errors.As(err, &fe) && !strings.Contains(fmt.Sprint(err), "accepts at most 1 arg") {
			t.Errorf("pace fetch %q = %v, want a usage error", args, err)
		}
	}
}

// fetchFactory returns a factory with test streams and the real clock
// (the requests are real).
func fetchFactory(stdin string) (*Factory, *strings.Builder, *strings.Builder) {
	ios, in, _, _ := Test()
	in.WriteString(stdin)
	out, errOut := &strings.Builder{}, &strings.Builder{}
	ios.Out, ios.ErrOut = &lockedWriter{w: out}, &lockedWriter{w: errOut}
	return &Factory{IOStreams: ios, Clock: throttle.SystemClock()}, out, errOut
}

func fetchOpts(f *Factory, url string) *FetchOptions {
	return &FetchOptions{IO: f.IOStreams, Factory: f, URL: url, OutputName: "{#}",
		Common: CommonOptions{Jobs: 4, Retries: 0, Progress: progressNever, Summary: summaryText, Grace: time.Second}}
}

func TestFetchOutputInOrderAndSummary(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/items/"))
		time.Sleep(time.Duration(5-n) * 5 * time.Millisecond) // later items answer first
		fmt.Fprintf(w, "item %d (%s)\n", n, r.Header.Get("User-Agent"))
	}))
	defer srv.Close()
	f, out, errOut := fetchFactory("1\n2\n3\n4\n")
	opts := fetchOpts(f, srv.URL+"/items/{}")
	opts.Common.KeepOrder = true
	if err := runFetch(context.Background(), opts); err != nil {
		t.Fatalf("runFetch = %v\n%s", err, errOut)
	}
	ua := "pace/" + version
	want := fmt.Sprintf("item 1 (%s)\nitem 2 (%s)\nitem 3 (%s)\nitem 4 (%s)\n", ua, ua, ua, ua)
	if out.String() != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if !strings.Contains(errOut.String(), "pace: 4 ok, 0 failed") || !strings.Contains(errOut.String(), "responses  200 ×4") {
		t.Errorf("stderr = %q, want a summary with 4 ok and 200 ×4", errOut)
	}
}

// TestFetchFailuresRedactedAndCounted: a bad URL line fails alone, a 404
// fails its item, the exit code is 1, the JSON summary counts statuses,
// and no credential shows anywhere, even with -v and --tag.
func TestFetchFailuresRedactedAndCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, "no such thing; you sent %s\n", r.Header.Get("Authorization"))
			return
		}
		io.WriteString(w, "fine\n")
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	items := strings.Join([]string{
		"http://ann:pw-secret-1@" + host + "/ok?api_key=key-secret-2",
		"http://ann:pw-secret-1@" + host + "/missing",
		"ann:pw-secret-1@" + host + "/no-scheme",
		"ftp://ann:pw-secret-1@" + host + "/x",
	}, "\n")
	f, out, errOut := fetchFactory(items)
	opts := fetchOpts(f, "")
	opts.Common.Verbose, opts.Common.Tag, opts.Common.Summary = true, true, summaryJSON
	opts.Headers = []string{"Authorization: Bearer tok-secret-3", "X-Api-Key: key-secret-4"}
	err := runFetch(context.Background(), opts)
	if exitCode(err) != ExitFailed {
		t.Fatalf("runFetch = %v, want exit %d\n%s", err, ExitFailed, errOut)
	}
	all := out.String() + errOut.String()
	for _, secret := range []string{"pw-secret-1", "key-secret-2", "tok-secret-3", "key-secret-4", "ann"} {
		if strings.Contains(all, secret) {
			t.Errorf("output shows %q:\n%s", secret, all)
		}
	}
	if !strings.Contains(out.String(), "http://REDACTED@"+host+"/ok?api_key=REDACTED\tfine\n") {
		t.Errorf("stdout = %q, want the tagged body with the redacted URL", out)
	}
	for _, want := range []string{
		"pace: job 2: GET http://REDACTED@" + host + "/missing: HTTP 404 Not Found",
		`pace: job 3: bad URL "REDACTED@` + host + `/no-scheme": no scheme`,
		`pace: job 4: bad URL "ftp://REDACTED@` + host + `/x": unsupported scheme "ftp"`,
		"no such thing; you sent REDACTED", // -v shows the error body, redacted
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	var sum struct {
		OK, Failed int64
		HTTP       HTTPSummary
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last stderr line is not JSON: %v", err)
	}
	if sum.OK != 1 || sum.Failed != 3 || sum.HTTP.Status["200"] != 1 || sum.HTTP.Status["404"] != 1 {
		t.Errorf("summary = %+v, want 1 ok, 3 failed, one 200 and one 404", sum)
	}
}

// TestFetchServerPauseBindsTheRun: a 429 with Retry-After: 1 pauses
// admissions for a second, the item is retried, and the summary names
// the server as what bound the run.
func TestFetchServerPauseBindsTheRun(t *testing.T) {
	ss, err := strictserver.New(strictserver.Options{RefuseFirst: 1, RetryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ss)
	defer srv.Close()
	f, _, errOut := fetchFactory("1\n2\n3\n")
	opts := fetchOpts(f, srv.URL+"/{}")
	opts.Common.Jobs, opts.Common.Retries = 1, 1
	opts.Common.Rules = []throttle.Rule{{N: 100, Window: time.Second}}
	opts.Common.Summary = summaryJSON
	start := time.Now()
	if err := runFetch(context.Background(), opts); err != nil {
		t.Fatalf("runFetch = %v\n%s", err, errOut)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("run took %v, want at least the 1s the server asked for", d)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	var sum struct {
		OK      int64
		Binding string
		HTTP    struct {
			Status       map[string]int64
			ServerPauses int64   `json:"server_pauses"`
			Paused       float64 `json:"paused_seconds"`
			PauseReason  string  `json:"pause_reason"`
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last stderr line is not JSON: %v\n%s", err, errOut)
	}
	if sum.OK != 3 || sum.Binding != "server" || sum.HTTP.Status["429"] != 1 || sum.HTTP.ServerPauses != 1 ||
		sum.HTTP.Paused < 0.5 || !strings.Contains(sum.HTTP.PauseReason, "429 Retry-After: 1") {
		t.Errorf("summary = %+v, want 3 ok, one 429, one pause binding the run", sum)
	}
}

func TestFetchUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		set  func(*FetchOptions)
		code int
		want string
	}{
		{"bad header", func(o *FetchOptions) { o.Headers = []string{"no colon"} }, -1, "bad header"},
		{"template without placeholder", func(o *FetchOptions) { o.URL = "https://example.com/" }, -1, "no placeholder"},
		{"missing data file", func(o *FetchOptions) { o.Data, o.HasData = "@/nonexistent/pace", true }, ExitUsage, "data file"},
		{"unreadable input", func(o *FetchOptions) { o.Common.Input = "/nonexistent/pace" }, ExitUsage, "open input"},
		{"output dir is a file", func(o *FetchOptions) { o.OutputDir = "/dev/null" }, ExitUsage, "output directory"},
	}
	for _, tt := range tests {
		f, _, errOut := fetchFactory("https://example.com/\n")
		opts := fetchOpts(f, "")
		tt.set(opts)
		err := runFetch(context.Background(), opts)
		var fe *FlagError
		switch {
		case tt.code == -1 && !errors.As(err, &fe):
			t.Errorf("%s: runFetch = %v, want a usage error", tt.name, err)
		case tt.code >= 0 && exitCode(err) != tt.code:
			t.Errorf("%s: runFetch = %v, want exit %d", tt.name, err, tt.code)
		}
		if msg := fmt.Sprint(err) + errOut.String(); !strings.Contains(msg, tt.want) {
			t.Errorf("%s: error %q, want it to mention %q", tt.name, msg, tt.want)
		}
	}
}

func TestFetchDryRun(t *testing.T) {
	f, out, errOut := fetchFactory("1\n2\n")
	opts := fetchOpts(f, "https://u:pw-777@api.example.com/items/{}?token=t-888")
	opts.Common.DryRun = true
	opts.OutputDir = filepath.Join(t.TempDir(), "never-made")
	if err := runFetch(context.Background(), opts); err != nil {
		t.Fatalf("runFetch = %v\n%s", err, errOut)
	}
	want := "GET 'https://REDACTED@api.example.com/items/1?token=REDACTED'\nGET 'https://REDACTED@api.example.com/items/2?token=REDACTED'\n"
	if out.String() != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if _, err := os.Stat(opts.OutputDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run made the output directory (%v)", err)
	}
}

// Script commands for fetch_*.txtar.

// cmdStrictserver starts a loopback strict server (internal/strictserver)
// for the rest of the script and sets $NAME to its URL:
//
//	strictserver NAME [-rules 5/s,12/3s] [-refuse N] [-retry-after 1s] [-date]
//	                  [-reset N] [-headers ietf|x] [-delay 10ms]
//
// Besides the strict server's own paths it serves, without counting them
// as arrivals: /_stats (its counts as JSON, for serverstats), /_headers
// (the request's headers, one "Name: value" per line, sorted), /_deny
// (401, echoing the Authorization header), /_body
// (method and body), /_big/N (N bytes) and /_stall/... (64 KiB, then
// nothing until the client goes away).
func cmdStrictserver(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: strictserver NAME [flags]")
	}
	fs := flag.NewFlagSet("strictserver", flag.ContinueOnError)
	rules := fs.String("rules", "", "")
	var o strictserver.Options
	fs.IntVar(&o.RefuseFirst, "refuse", 0, "")
	fs.DurationVar(&o.RetryAfter, "retry-after", 0, "")
	fs.BoolVar(&o.RetryAfterDate, "date", false, "")
	fs.IntVar(&o.ResetFirst, "reset", 0, "")
	fs.DurationVar(&o.Delay, "delay", 0, "")
	headers := fs.String("headers", "", "")
	ts.Check(fs.Parse(args[1:]))
	var err error
	o.Rules, err = throttle.ParseRules(*rules)
	ts.Check(err)
	switch *headers {
	case "":
	case "ietf":
		o.Headers = strictserver.RateLimitHeaders
	case "x":
		o.Headers = strictserver.XRateLimitHeaders
	default:
		ts.Fatalf("strictserver: -headers %q, want ietf or x", *headers)
	}
	ss, err := strictserver.New(o)
	ts.Check(err)
	mux := http.NewServeMux()
	mux.Handle("/", ss)
	mux.HandleFunc("/_stats", func(w http.ResponseWriter, _ *http.Request) {
		st := ss.Stats()
		json.NewEncoder(w).Encode(map[string]int64{"accepted": st.Accepted, "refused": st.Refused, "reset": st.Reset})
	})
	mux.HandleFunc("/_headers", func(w http.ResponseWriter, r *http.Request) {
		var lines []string
		for name, vals := range r.Header {
			for _, v := range vals {
				lines = append(lines, name+": "+v)
			}
		}
		slices.Sort(lines)
		io.WriteString(w, strings.Join(lines, "\n")+"\n")
	})
	mux.HandleFunc("/_deny", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "denied: %s\n", r.Header.Get("Authorization"))
	})
	mux.HandleFunc("/_body", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s\n", r.Method, b)
	})
	mux.HandleFunc("/_big/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		chunk := []byte(strings.Repeat("x", 1023) + "\n")
		for ; n >= len(chunk); n -= len(chunk) {
			w.Write(chunk)
		}
		w.Write(chunk[:n])
	})
	mux.HandleFunc("/_stall/", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("partial\n", 8<<10)))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

// cmdServerstats checks a strictserver's counts:
//
//	serverstats NAME accepted N refused N [reset N]
//
// With !, it passes when some count differs.
func cmdServerstats(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 || len(args)%2 != 1 {
		ts.Fatalf("usage: serverstats NAME (accepted|refused|reset) N ...")
	}
	resp, err := http.Get(ts.Getenv(args[0]) + "/_stats")
	ts.Check(err)
	defer resp.Body.Close()
	var st map[string]int64
	ts.Check(json.NewDecoder(resp.Body).Decode(&st))
	var diffs []string
	for i := 1; i < len(args); i += 2 {
		want, err := strconv.ParseInt(args[i+1], 10, 64)
		ts.Check(err)
		if got, ok := st[args[i]]; !ok || got != want {
			diffs = append(diffs, fmt.Sprintf("%s %d, want %d", args[i], got, want))
		}
	}
	switch {
	case !neg && len(diffs) > 0:
		ts.Fatalf("server: %s", strings.Join(diffs, "; "))
	case neg && len(diffs) == 0:
		ts.Fatalf("server counts %v match, want a difference", st)
	}
}
