package pacehttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxServerDelay caps the delays servers ask for, so that a garbled
// header cannot overflow time arithmetic. About 31 years.
const maxServerDelay = 1e9 * time.Second

// X-rateLimit-Reset values at or above these are epoch timestamps, not
// delays: 1e9 seconds is 2001-09-09, and no server asks to wait 31 years.
const (
	epochSecondsFrom = 1e9
	epochMillisFrom  = 1e12
)

// parseRetryAfter reads a Retry-After header value (RFC 9110, 10.2.3):
// either a number of seconds or an HTTP-date. It returns the instant the
// server allows the next request and whether v was understood. A date in
// the past yields now.
func parseRetryAfter(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || time.Duration(n) > maxServerDelay/time.Second {
			return now.Add(maxServerDelay), true // absurdly long, but a wait nonetheless
		}
		return now.Add(time.Duration(n) * time.Second), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, false
	}
	if t.Before(now) {
		return now, true
	}
	return t, true
}

// rateLimit is what a response's rate-limit headers say about the
// server's quota.
type rateLimit struct {
	// Remaining is the number of calls the server still allows.
	Remaining int64
	// Reset is when the quota is renewed; zero if the headers do not say.
	Reset time.Time
	// Header names the header that gave Remaining, for diagnostics:
	// "RateLimit", "RateLimit-Remaining" or "X-rateLimit-Remaining".
	Header string
}

// parseRateLimit reads a response's rate-limit headers, at instant now.
// It understands, in this order of preference:
//
//   - rateLimit: "policy";r=0;t=5 (IETF draft 08 and later: r is the
//     remaining quota, t the seconds until reset; with several policies
//     the most exhausted one counts);
//   - rateLimit: limit=10, remaining=0, reset=5 (drafts 06 and 07);
//   - RateLimit-Remaining and rateLimit-Reset (earlier drafts; Reset is
//     delta seconds);
//   - X-RateLimit-Remaining and X-rateLimit-Reset, where Reset is delta
//     seconds below 1e9, epoch seconds from 1e9 and epoch milliseconds
//     from 1e12, or X-rateLimit-Reset-After in delta seconds.
//
// It reports false when no family gives a usable Remaining.
func parseRateLimit(h http.Header, now time.Time) (rateLimit, bool) {
	if v := h[keyRateLimit]; len(v) > 0 {
		if rl, ok := parseRateLimitField(strings.Join(v, ","), now); ok {
			return rl, true
		}
	}
	if rem, ok := parseCount(get(h, keyRemaining)); ok {
		rl := rateLimit{Remaining: rem, Header: "RateLimit-Remaining"}
		if d, ok := parseDelta(get(h, keyReset)); ok {
			rl.Reset = now.Add(d)
		}
		return rl, true
	}
	if rem, ok := parseCount(get(h, keyXRemaining)); ok {
		rl := rateLimit{Remaining: rem, Header: "X-RateLimit-Remaining"}
		if t, ok := parseXReset(get(h, keyXReset), now); ok {
			rl.Reset = t
		} else if d, ok := parseDelta(get(h, keyXResetAfter)); ok {
			rl.Reset = now.Add(d)
		}
		return rl, true
	}
	return rateLimit{}, false
}

// The keys of the rate-limit headers in an http.Header: canonical, as
// http.CanonicalHeaderKey makes them (RateLimit becomes Ratelimit), so
// that a lookup need not canonicalise the name each time (Header.Get
// does, allocating for these).
const (
	keyRateLimit   = "Ratelimit"
	keyRemaining   = "Ratelimit-Remaining"
	keyReset       = "Ratelimit-Reset"
	keyXRemaining  = "X-Ratelimit-Remaining"
	keyXReset      = "X-Ratelimit-Reset"
	keyXResetAfter = "X-Ratelimit-Reset-After"
	keyRetryAfter  = "Retry-After"
)

// get is h.Get(key) for a canonical key.
func get(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseRateLimitField reads the structured rateLimit field, in either the
// list form of draft 08+ or the dictionary form of drafts 06-07.
func parseRateLimitField(v string, now time.Time) (rateLimit, bool) {
	best := rateLimit{Remaining: -1}
	consider := func(rem int64, reset time.Time) {
		switch {
		case best.Remaining < 0 || rem < best.Remaining:
			best.Remaining, best.Reset = rem, reset
		case rem == best.Remaining && reset.After(best.Reset):
			best.Reset = reset
		}
	}
	// The dictionary form's members, remaining= and reset=; only those
	// two are kept (a hostile header may hold a million others).
	var dictRemaining, dictReset string
	for member := range strings.SplitSeq(v, ",") {
		head, params, _ := strings.Cut(member, ";")
		head = strings.TrimSpace(head)
		if k, val, ok := strings.Cut(head, "="); ok && !strings.HasPrefix(head, `"`) {
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "remaining":
				dictRemaining = strings.TrimSpace(val)
			case "reset":
				dictReset = strings.TrimSpace(val)
			}
			continue
		}
		var rem int64 = -1
		var reset time.Time
		for p := range strings.SplitSeq(params, ";") {
			k, val, _ := strings.Cut(p, "=")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "r":
				if n, ok := parseCount(val); ok {
					rem = n
				}
			case "t":
				if d, ok := parseDelta(val); ok {
					reset = now.Add(d)
				}
			}
		}
		if rem >= 0 {
			consider(rem, reset)
		}
	}
	if rem, ok := parseCount(dictRemaining); ok {
		var reset time.Time
		if d, ok := parseDelta(dictReset); ok {
			reset = now.Add(d)
		}
		consider(rem, reset)
	}
	if best.Remaining < 0 {
		return rateLimit{}, false
	}
	best.Header = "RateLimit"
	return best, true
}

// parseXReset reads X-rateLimit-Reset: delta seconds, epoch seconds or
// epoch milliseconds, told apart by magnitude. An epoch in the past yields
// now.
func parseXReset(v string, now time.Time) (time.Time, bool) {
	f, ok := parseSeconds(v)
	if !ok {
		return time.Time{}, false
	}
	var t time.Time
	switch {
	case f >= epochMillisFrom:
		if f > 1e15 { // past year 33658: garbage
			return time.Time{}, false
		}
		t = time.UnixMilli(int64(f))
	case f >= epochSecondsFrom:
		t = time.Unix(int64(f), int64((f-float64(int64(f)))*1e9))
	default:
		return now.Add(time.Duration(f * float64(time.Second))), true
	}
	switch {
	case t.Before(now):
		return now, true
	case t.After(now.Add(maxServerDelay)):
		return now.Add(maxServerDelay), true
	}
	return t, true
}

// parseCount reads a non-negative integer count.
func parseCount(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if !isDigits(v) {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// parseDelta reads a non-negative number of seconds, possibly with a
// fraction, capped at maxServerDelay.
func parseDelta(v string) (time.Duration, bool) {
	f, ok := parseSeconds(v)
	if !ok {
		return 0, false
	}
	if f >= float64(maxServerDelay/time.Second) {
		return maxServerDelay, true
	}
	return time.Duration(f * float64(time.Second)), true
}

// parseSeconds reads a non-negative decimal number: digits with at most
// one '.', nothing else (no sign, exponent, hex, Inf or NaN).
func parseSeconds(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	whole, frac, _ := strings.Cut(v, ".")
	if !isDigits(whole) || frac != "" && !isDigits(frac) {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
