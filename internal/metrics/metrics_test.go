package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestServe(t *testing.T) {
	snap := Snapshot{
		Admitted: 7, OK: 4, Failed: 1, Retried: 2, NotStarted: 3, InFlight: 2,
		Rules: []Rule{
			{Rule: "5/s", Usage: 0.6, PeakUsage: 1, Waits: 9, WaitSeconds: 1.5},
			{Rule: "cost:100/min", Usage: 0.25, PeakUsage: 0.5},
		},
		Pauses: 1, PauseSeconds: 2, MarginSeconds: 0.05,
		Store: "local", RoundTrips: 11, Failures: 1,
	}
	s, err := Serve("127.0.0.1:0", func() Snapshot { return snap })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		"pace_calls_admitted_total 7\n",
		`pace_calls_total{outcome="ok"} 4` + "\n",
		`pace_calls_total{outcome="failed"} 1` + "\n",
		`pace_calls_total{outcome="retried"} 2` + "\n",
		"pace_calls_not_started_total 3\n",
		"pace_in_flight 2\n",
		`pace_rule_usage_ratio{rule="5/s"} 0.6` + "\n",
		`pace_rule_peak_usage_ratio{rule="5/s"} 1` + "\n",
		`pace_rule_waits_total{rule="5/s"} 9` + "\n",
		`pace_rule_wait_seconds_total{rule="5/s"} 1.5` + "\n",
		`pace_rule_usage_ratio{rule="cost:100/min"} 0.25` + "\n",
		"pace_server_pauses_total 1\n",
		"pace_server_pause_seconds_total 2\n",
		"pace_margin_seconds 0.05\n",
		`pace_store_round_trips_total{store="local"} 11` + "\n",
		`pace_store_failures_total{store="local"} 1` + "\n",
		"# TYPE pace_rule_waits_total counter\n",
		"# TYPE pace_rule_usage_ratio gauge\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/metrics"); err == nil {
		t.Error("still serving after Close")
	}
}

func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9090": true,
		"[::1]:9090":     true,
		"localhost:0":    true,
		"0.0.0.0:9090":   true, // given explicitly: the user's choice
		":9090":          false,
		"9090":           false,
		"127.0.0.1":      false,
		"":               false,
	} {
		if err := CheckAddr(addr); (err == nil) != ok {
			t.Errorf("CheckAddr(%q) = %v, want ok %v", addr, err, ok)
		}
	}
}
