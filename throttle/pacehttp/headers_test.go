package pacehttp

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		v      string
		want   time.Time
		wantOK bool
	}{
		{"5", now.Add(5 * time.Second), true},
		{" 7 ", now.Add(7 * time.Second), true},
		{"0", now, true},
		// The three HTTP-date forms of RFC 9110.
		{"Sat, 01 Mar 2025 12:00:09 GMT", now.Add(9 * time.Second), true},
		{"Saturday, 01-Mar-25 12:00:09 GMT", now.Add(9 * time.Second), true},
		{"Sat Mar  1 12:00:09 2025", now.Add(9 * time.Second), true},
		// A date in the past means: now.
		{"Sat, 01 Mar 2025 11:00:00 GMT", now, true},
		// An absurd delay is capped instead of overflowing.
		{"99999999999999999999999", now.Add(maxServerDelay), true},
		{"1.5", time.Time{}, false},
		{"-1", time.Time{}, false},
		{"+3", time.Time{}, false},
		{"", time.Time{}, false},
		{"soon", time.Time{}, false},
		{"0x10", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.v, now)
		if ok != tt.wantOK || !got.Equal(tt.want) {
			t.Errorf("ParseRetryAfter(%q) = %v, %v, want %v, %v", tt.v, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestParseRateLimit(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	epoch := now.Add(30 * time.Second).Unix()
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name   string
		h      http.Header
		want   rateLimit
		wantOK bool
	}{
		{"none", hdr(), rateLimit{}, false},
		{"ietf fields", hdr("RateLimit-Remaining", "0", "RateLimit-Reset", "3"),
			rateLimit{0, now.Add(3 * time.Second), "RateLimit-Remaining"}, true},
		{"ietf fields, no reset", hdr("RateLimit-Remaining", "4"),
			rateLimit{4, time.Time{}, "RateLimit-Remaining"}, true},
		{"ietf fractional reset", hdr("RateLimit-Remaining", "0", "RateLimit-Reset", "0.25"),
			rateLimit{0, now.Add(250 * time.Millisecond), "RateLimit-Remaining"}, true},
		{"draft 06 dictionary", hdr("RateLimit", "limit=10, remaining=0, reset=7"),
			rateLimit{0, now.Add(7 * time.Second), "RateLimit"}, true},
		{"draft 08 list, most exhausted policy wins", hdr("RateLimit", `"burst";r=5;t=1, "daily";r=0;t=3600`),
			rateLimit{0, now.Add(time.Hour), "RateLimit"}, true},
		{"draft 08 list across field lines", hdr("RateLimit", `"a";r=2;t=1`, "RateLimit", `"b";r=2;t=9`),
			rateLimit{2, now.Add(9 * time.Second), "RateLimit"}, true},
		{"structured field preferred", hdr("RateLimit", `"p";r=0;t=2`, "X-RateLimit-Remaining", "50"),
			rateLimit{0, now.Add(2 * time.Second), "RateLimit"}, true},
		{"x delta seconds", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "60"),
			rateLimit{0, now.Add(time.Minute), "X-RateLimit-Remaining"}, true},
		{"x epoch seconds", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa(epoch)),
			rateLimit{0, time.Unix(epoch, 0), "X-RateLimit-Remaining"}, true},
		{"x epoch milliseconds", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa(epoch*1000+500)),
			rateLimit{0, time.UnixMilli(epoch*1000 + 500), "X-RateLimit-Remaining"}, true},
		{"x epoch in the past", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa(now.Unix()-100)),
			rateLimit{0, now, "X-RateLimit-Remaining"}, true},
		{"x reset-after", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "1.5"),
			rateLimit{0, now.Add(1500 * time.Millisecond), "X-RateLimit-Remaining"}, true},
		{"garbage remaining", hdr("RateLimit-Remaining", "lots"), rateLimit{}, false},
		{"negative remaining", hdr("X-RateLimit-Remaining", "-1"), rateLimit{}, false},
		{"garbage reset ignored", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "tomorrow"),
			rateLimit{0, time.Time{}, "X-RateLimit-Remaining"}, true},
		{"structured without remaining falls through", hdr("RateLimit", "limit=10", "RateLimit-Remaining", "3"),
			rateLimit{3, time.Time{}, "RateLimit-Remaining"}, true},
	}
	for _, tt := range tests {
		got, ok := parseRateLimit(tt.h, now)
		if ok != tt.wantOK || got.Remaining != tt.want.Remaining || !got.Reset.Equal(tt.want.Reset) || got.Header != tt.want.Header {
			t.Errorf("%s: parseRateLimit(%v) = %+v, %v, want %+v, %v", tt.name, tt.h, got, ok, tt.want, tt.wantOK)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func FuzzParseRateLimit(f *testing.F) {
	f.Add("0", "3", "limit=1, remaining=0, reset=1", "1700000000")
	f.Add("x", "1e9", `"a";r=0;t=5`, "-5")
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, rem, reset, structured, xreset string) {
		h := http.Header{}
		h.Set("RateLimit-Remaining", rem)
		h.Set("RateLimit-Reset", reset)
		h.Set("RateLimit", structured)
		h.Set("X-RateLimit-Reset", xreset)
		if rem == "x" {
			h.Del("RateLimit-Remaining")
			h.Set("X-RateLimit-Remaining", "0")
		}
		rl, ok := parseRateLimit(h, now)
		if !ok {
			return
		}
		if rl.Remaining < 0 {
			t.Errorf("Remaining = %d < 0", rl.Remaining)
		}
		if !rl.Reset.IsZero() && (rl.Reset.Before(now) || rl.Reset.After(now.Add(maxServerDelay))) {
			t.Errorf("Reset = %v, outside [now, now+%v]", rl.Reset, maxServerDelay)
		}
		if until, ok := parseRetryAfter(reset, now); ok && (until.Before(now) || until.After(now.Add(maxServerDelay))) {
			t.Errorf("ParseRetryAfter(%q) = %v, outside [now, now+max]", reset, until)
		}
	})
}

// roundTripFunc is an http.RoundTripper that calls itself.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// response returns a response to req with code, the header's name-value
// pairs and a short body.
func response(req *http.Request, code int, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	body := "body\n"
	return &http.Response{
		Status: strconv.Itoa(code) + " " + http.StatusText(code), StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

// A huge rate-limit or policy header (the response's headers may hold 10
// MiB) is read in a few allocations, not in proportion to its members:
// a 10 MiB RateLimit field of k=v members cost 90 MB of map, a policy 45
// MB of split slices, for every such response.
func TestParseHugeHeaders(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "k%d=%d;w=1;q=2, \"p%d\";r=%d;t=1, ", i, i, i, i+1)
	}
	h := http.Header{"Ratelimit": {b.String()}, "Ratelimit-Policy": {b.String()}}
	now := time.Now()
	allocs := testing.AllocsPerRun(2, func() {
		parseRateLimit(h, now)
		parsePolicy(h)
	})
	if allocs > 10 {
		t.Errorf("reading a 1 MiB RateLimit and RateLimit-Policy: %v allocations, want at most 10", allocs)
	}
	if rl, ok := parseRateLimit(h, now); !ok || rl.Remaining != 1 {
		t.Errorf("parseRateLimit = %+v, %v; want the least remaining, 1", rl, ok)
	}
}

// The keys looked up directly are the canonical forms of the names.
func TestHeaderKeysCanonical(t *testing.T) {
	keys := map[string]string{
		"RateLimit": keyRateLimit, "RateLimit-Remaining": keyRemaining, "RateLimit-Reset": keyReset,
		"X-RateLimit-Remaining": keyXRemaining, "X-RateLimit-Reset": keyXReset,
		"X-RateLimit-Reset-After": keyXResetAfter, "Retry-After": keyRetryAfter,
	}
	for _, p := range policyHeaders {
		keys[p.name] = p.key
	}
	for name, key := range keys {
		if c := http.CanonicalHeaderKey(name); c != key {
			t.Errorf("key for %s is %q, want %q", name, key, c)
		}
	}
}
