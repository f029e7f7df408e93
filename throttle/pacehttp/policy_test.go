package pacehttp

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

func TestParsePolicy(t *testing.T) {
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	rule := func(n int, w time.Duration) throttle.Rule { return throttle.Rule{N: n, Window: w} }
	var many []string
	for i := 1; i <= 10; i++ {
		many = append(many, strconv.Itoa(i)+";w="+strconv.Itoa(i))
	}
	tests := []struct {
		name       string
		h          http.Header
		want       []throttle.Rule
		wantHeader string
	}{
		{"none", hdr(), nil, ""},
		{"draft 08 policies, sorted by window", hdr("RateLimit-Policy", `"daily";q=1000;w=86400, "burst";q=100;w=1`),
			[]throttle.Rule{rule(100, time.Second), rule(1000, 24*time.Hour)}, "RateLimit-Policy"},
		{"draft 08 across field lines", hdr("RateLimit-Policy", `"a";q=10;w=60`, "RateLimit-Policy", `"b";q=5;w=1`),
			[]throttle.Rule{rule(5, time.Second), rule(10, time.Minute)}, "RateLimit-Policy"},
		{"older drafts: quota first, a bare quota says nothing", hdr("RateLimit-Limit", "100, 100;w=60"),
			[]throttle.Rule{rule(100, time.Minute)}, "RateLimit-Limit"},
		{"fractional window", hdr("RateLimit-Policy", "3;w=0.5"), []throttle.Rule{rule(3, 500*time.Millisecond)}, "RateLimit-Policy"},
		{"x window", hdr("X-RateLimit-Limit", "60;window=60"), []throttle.Rule{rule(60, time.Minute)}, "X-RateLimit-Limit"},
		{"bare x limit", hdr("X-RateLimit-Limit", "60"), nil, ""},
		{"duplicates dropped", hdr("RateLimit-Policy", `"a";q=10;w=1, "b";q=10;w=1`), []throttle.Rule{rule(10, time.Second)}, "RateLimit-Policy"},
		{"unusable members skipped", hdr("RateLimit-Policy", `"z";q=0;w=1, "neg";q=-1;w=1, "nw";q=5, "w0";q=5;w=0, "junk";q=x;w=y, "ok";q=7;w=2`),
			[]throttle.Rule{rule(7, 2*time.Second)}, "RateLimit-Policy"},
		{"unusable policy falls through", hdr("RateLimit-Policy", "garbage", "RateLimit-Limit", "9;w=3"),
			[]throttle.Rule{rule(9, 3*time.Second)}, "RateLimit-Limit"},
		{"quota past MaxLimit", hdr("RateLimit-Policy", "99999999999999999;w=1"), nil, ""},
		{"at most 8 rules", hdr("RateLimit-Policy", strings.Join(many, ", ")),
			[]throttle.Rule{rule(1, time.Second), rule(2, 2*time.Second), rule(3, 3*time.Second), rule(4, 4*time.Second),
				rule(5, 5*time.Second), rule(6, 6*time.Second), rule(7, 7*time.Second), rule(8, 8*time.Second)}, "RateLimit-Policy"},
	}
	for _, tt := range tests {
		got, header := parsePolicy(tt.h)
		if !slices.Equal(got, tt.want) || header != tt.wantHeader {
			t.Errorf("%s: ParsePolicy(%v) = %v, %q, want %v, %q", tt.name, tt.h, got, header, tt.want, tt.wantHeader)
		}
	}
}
