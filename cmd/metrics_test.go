package cmd

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// scrape reads the metrics at url as "name{labels}" → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// TestMetricsDuringRun scrapes --metrics-addr while the last request of a
// real fetch run is held by the server, checks what it says then, and
// checks it against the run's JSON summary: the same numbers.
func TestMetricsDuringRun(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/6" {
			<-release
		}
		io.WriteString(w, r.URL.Path+"\n")
		served.Add(1)
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	sumFile := filepath.Join(t.TempDir(), "summary.json")
	_, stderr, wait := startPace(t, numbers(6), "fetch", "-r", "4/s", "-r", "100/min", "-j", "2", "--margin", "5ms",
		"--metrics-addr", "127.0.0.1:0", "--summary-file", sumFile, "--progress", "never", srv.URL+"/{}")

	re := regexp.MustCompile(`pace: metrics at (http://127\.0\.0\.1:\d+/metrics)\n`)
	var url string
	waitFor(t, "the metrics address on stderr", func() bool {
		m := re.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	waitFor(t, "5 requests answered", func() bool { return served.Load() == 5 })
	var m map[string]float64
	// The sixth call is admitted after the fifth (the pool asks once the
	// one before holds its place), so the fifth can be answered and
	// counted first: wait for the state the held request makes, 5 ok and
	// the sixth admitted and in flight.
	waitFor(t, "5 items ok and the sixth in flight in the metrics", func() bool {
		m = scrape(t, url)
		return m[`pace_calls_total{outcome="ok"}`] == 5 && m["pace_calls_admitted_total"] == 6 && m["pace_in_flight"] == 1
	})
	for name, want := range map[string]float64{
		"pace_calls_admitted_total":           6,
		`pace_calls_total{outcome="failed"}`:  0,
		`pace_calls_total{outcome="retried"}`: 0,
		"pace_in_flight":                      1,
		"pace_margin_seconds":                 0.005,
		"pace_server_pauses_total":            0,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if _, ok := m[`pace_store_round_trips_total{store="redis"}`]; ok {
		t.Error("store metrics without a store")
	}
	if w := m[`pace_rule_waits_total{rule="4/s"}`]; w < 1 {
		t.Errorf("4/s waits = %v: 6 calls under 4/s must wait", w)
	}
	close(release)
	if code := wait(); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}

	// No admission came after the scrape: the rules' counts are final.
	sum := readSummaryFile(t, sumFile)
	if sum.OK != 6 || sum.Attempts != 6 {
		t.Errorf("summary: %d ok of %d attempts, want 6 of 6", sum.OK, sum.Attempts)
	}
	if len(sum.Rules) != 2 {
		t.Fatalf("summary rules %+v", sum.Rules)
	}
	for _, r := range sum.Rules {
		label := `{rule="` + r.Rule + `"}`
		if got := m["pace_rule_waits_total"+label]; got != float64(r.Waits) {
			t.Errorf("rule %s: metrics say %v waits, the summary %d", r.Rule, got, r.Waits)
		}
		if got := m["pace_rule_wait_seconds_total"+label]; math.Abs(got-r.WaitTime) > 1e-3 {
			t.Errorf("rule %s: metrics say %vs waited, the summary %vs", r.Rule, got, r.WaitTime)
		}
		if got := m["pace_rule_peak_usage_ratio"+label]; math.Abs(got-r.PeakUsage) > 1e-9 {
			t.Errorf("rule %s: metrics say peak %v, the summary %v", r.Rule, got, r.PeakUsage)
		}
	}
	if sum.Margin.Seconds != m["pace_margin_seconds"] {
		t.Errorf("margin: summary %v, metrics %v", sum.Margin.Seconds, m["pace_margin_seconds"])
	}
}

// TestMetricsAddrRefused refuses addresses that would serve on every
// interface by accident, and a port already taken, before anything runs.
func TestMetricsAddrRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ addr, want string }{
		{":9090", `invalid argument ":9090" for "--metrics-addr": no host, so it would serve on every interface: give one, such as 127.0.0.1:9090`},
		{"9090", `invalid argument "9090" for "--metrics-addr": want HOST:PORT, such as 127.0.0.1:9090`},
	} {
		code, _, stderr := execPace(t, "a\n", "run", "--metrics-addr", tt.addr, "--", "true")
		if code != ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("--metrics-addr %s: exit %d, stderr %q; want 2 and %q", tt.addr, code, stderr, tt.want)
		}
	}
	busy := httptest.NewServer(http.NotFoundHandler())
	defer busy.Close()
	addr := strings.TrimPrefix(busy.URL, "http://")
	code, stdout, stderr := execPace(t, "a\n", "run", "--metrics-addr", addr, "--", "echo", "ran")
	if code != ExitUsage || !strings.Contains(stderr, "pace: --metrics-addr "+addr+": listen") || stdout != "" {
		t.Errorf("busy port: exit %d, stdout %q, stderr %q; want 2, nothing run, a listen error", code, stdout, stderr)
	}
}

// summaryFile is the part of a JSON summary (--summary-file) tests read.
type summaryFile struct {
	OK          int64   `json:"ok"`
	Failed      int64   `json:"failed"`
	Attempts    int64   `json:"attempts"`
	Interrupted *string `json:"interrupted"`
	Rules       []struct {
		Rule      string  `json:"rule"`
		PeakUsage float64 `json:"peak_usage"`
		Waits     int64   `json:"waits"`
		WaitTime  float64 `json:"wait_seconds"`
	} `json:"rules"`
	Margin struct {
		Seconds float64 `json:"seconds"`
	} `json:"margin"`
	Proxy *struct {
		Requests int64 `json:"requests"`
		Stalled  int64 `json:"stalled_408"`
	} `json:"proxy"`
}

// readSummaryFile reads the JSON summary at path.
func readSummaryFile(t *testing.T, path string) summaryFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum summaryFile
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary file %s: %v", b, err)
	}
	return sum
}
