package fetch

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// TestFetchReportsPolicy: a response's published policy reaches
// HTTPInfo, unless server limits are ignored.
func TestFetchReportsPolicy(t *testing.T) {
	client := inProcess(func(req *http.Request) *http.Response {
		return response(req, 200, "RateLimit-Policy", `"burst";q=10;w=1`)
	})
	want := []throttle.Rule{{N: 10, Window: time.Second}}
	for _, ignore := range []bool{false, true} {
		e := newFetch(t, Options{Client: client, IgnoreServerLimits: ignore})
		res := fetchOne(t, e, "http://api.example/x")
		wantRules, wantHeader := want, "RateLimit-Policy"
		if ignore {
			wantRules, wantHeader = nil, ""
		}
		if !res.OK() || !slices.Equal(res.HTTP.Policy, wantRules) || res.HTTP.PolicyHeader != wantHeader {
			t.Errorf("IgnoreServerLimits %v: %s, policy %v from %q; want ok, %v from %q",
				ignore, res.Status(), res.HTTP.Policy, res.HTTP.PolicyHeader, wantRules, wantHeader)
		}
	}
}
