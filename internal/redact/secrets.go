package redact

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Add records secret as a known secret, to be hidden wherever String,
// Header or Error find it, and in the forms it takes in URLs and quoted
// messages: query-escaped, path-escaped, userinfo-escaped and as
// strconv.Quote writes it. A value of several words is a header value such
// as "Bearer abc123": each word after the first (the scheme) is recorded
// too. Values shorter than 3 bytes are ignored.
//
// Add must not run concurrently with other methods on r; see Redactor.
func (r *Redactor) Add(secret string) {
	r.add(secret)
	if f := strings.Fields(secret); len(f) > 1 {
		for _, w := range f[1:] {
			r.add(w)
		}
	}
}

// AddURL records the credentials in u as known secrets, as Add does: its
// password, or its user name when the password is missing or empty (see
// RawURL), and the values of its secret parameters, both as written and
// decoded. A nil u records nothing.
//
// AddURL must not run concurrently with other methods on r; see Redactor.
func (r *Redactor) AddURL(u *url.URL) {
	if u == nil {
		return
	}
	if u.User != nil {
		if p, _ := u.User.Password(); p != "" {
			r.add(p)
		} else {
			r.add(u.User.Username())
		}
	}
	r.rawURL(u.String(), 0, func(v string) {
		r.add(v)
		if dec, err := url.QueryUnescape(v); err == nil {
			r.add(dec)
		}
		if dec, err := url.PathUnescape(v); err == nil {
			r.add(dec)
		}
	})
}

// add records v and its escaped forms, unless v is too short. The slice
// is never written in place, so that copies of r (With) stay apart.
func (r *Redactor) add(v string) {
	if len(v) < minSecretLen {
		return
	}
	q := strconv.Quote(v)
	for _, form := range [...]string{
		v,
		url.QueryEscape(v),
		url.PathEscape(v),
		url.UserPassword("", v).String()[1:], // ":" + escaped
		q[1 : len(q)-1],
	} {
		if !slices.Contains(r.secrets, form) {
			r.secrets = append(slices.Clip(r.secrets), form)
		}
	}
}

// String returns s with every URL redacted (see Text) and every known
// secret replaced by Placeholder. Redacting the result again changes
// nothing.
func (r *Redactor) String(s string) string {
	// Hiding a known secret can join what Text saw as two pieces ("a URL
	// <secret>?token=x"), so Text runs again until nothing changes. Text
	// only turns text into placeholders, which hideKnown leaves alone, so
	// the loop ends after three passes at most; maxPasses is a backstop.
	const maxPasses = 8
	for range maxPasses {
		t := r.hideKnown(r.Text(s))
		if t == s {
			break
		}
		s = t
	}
	return s
}

// hideKnown returns s with every known secret replaced by Placeholder.
// Occurrences that overlap a placeholder already in s are left alone: a
// secret such as "abcRE" would otherwise find itself again in
// "abcREDACTED" each time, and hiding it would never end. So hiding twice
// changes nothing: the text between placeholders is text in which every
// occurrence was hidden the first time.
func (r *Redactor) hideKnown(s string) string {
	if r == nil || len(r.secrets) == 0 {
		return s
	}
	type span struct{ start, end int }
	var held []span // placeholders in s, in order
	for i := 0; ; {
		j := strings.Index(s[i:], Placeholder)
		if j < 0 {
			break
		}
		held = append(held, span{i + j, i + j + len(Placeholder)})
		i += j + len(Placeholder)
	}
	overlapsHeld := func(sp span) bool {
		// Only the first placeholder that ends after sp starts can
		// overlap it: those before end too early, those after start
		// later than it does.
		k, _ := slices.BinarySearchFunc(held, sp.start, func(h span, start int) int { return h.end - 1 - start })
		return k < len(held) && held[k].start < sp.end
	}
	var spans []span
	for _, v := range r.secrets {
		for i := 0; ; {
			j := strings.Index(s[i:], v)
			if j < 0 {
				break
			}
			if sp := (span{i + j, i + j + len(v)}); !overlapsHeld(sp) {
				spans = append(spans, sp)
			}
			i += j + 1 // occurrences may overlap
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	done := 0 // s[:done] is written
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start < end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(s[done:start])
		b.WriteString(Placeholder)
		done = end
	}
	b.WriteString(s[done:])
	return b.String()
}
