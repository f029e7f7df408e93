package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/throttle"
)

// TestRun sends every item through a strict server, refusals retried.
func TestRun(t *testing.T) {
	rules, err := throttle.ParseRules("2/100ms,cost:20/100ms")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := strictserver.New(strictserver.Options{Rules: rules, CostParam: "cost"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	items := filepath.Join(t.TempDir(), "items")
	if err := os.WriteFile(items, []byte("1 5\n2 15\n3 10\n4 10\n5 1\n6 20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = run([]string{"-items", items, "-url", ts.URL + "/{1}?cost={2}", "-requests", "2", "-tokens", "20",
		"-per", "100ms", "-pause", "150ms"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	want := "succeeded=6 failed=0 rate_limit_errors=" + strconv.FormatInt(st.Refused, 10) + " other_errors=0\n"
	if out.String() != want || st.Accepted != 6 {
		t.Errorf("run printed %q, server accepted %d; want %q and 6", out.String(), st.Accepted, want)
	}
	for i, r := range throttle.Check(rules, srv.Calls()) {
		if r.Violations > 0 {
			t.Errorf("rule %d: the server accepted %d calls over it", i, r.Violations)
		}
	}
}
