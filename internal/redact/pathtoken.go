package redact

import "strings"

// pathTokenMarks are the texts one of which every URL with a token in its
// path holds (see hidePathTokens), so that most URLs are passed over
// without being split into segments.
var pathTokenMarks = [...]string{"/bot", "/services/", "/workflows/", "/triggers/", "/webhooks/", "/key/", "/IncomingWebhook/", "/hooks/"}

// mayHoldPathToken reports whether s may hold a token in a URL path.
func mayHoldPathToken(s string) bool {
	for _, m := range pathTokenMarks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// hidePathTokens returns path, the path of a URL on host (as written,
// with any port), with the tokens that well-known services put in paths
// replaced by Placeholder, and calls seen, if not nil, with each:
//
//   - Telegram bots: /bot<id>:<token>/method keeps the bot's id;
//   - Slack webhooks on hooks.slack.com (or any host, with the shape
//     /services/T.../B.../<secret>): every segment after the third of
//     /services/, /workflows/ and /triggers/;
//   - Discord webhooks: /webhooks/<numeric id>/<token>;
//   - IFTTT: /with/key/<key>;
//   - Microsoft Teams: every segment after /IncomingWebhook/;
//   - Zapier: /hooks/catch/<id>/<secret>;
//   - Mattermost: /hooks/<26 lower-case letters and digits>.
//
// Which segments are hidden is decided from the segments as given, and a
// hidden segment never matches a rule that hides another, so hiding twice
// hides nothing more.
func hidePathTokens(host, path string, seen func(string)) string {
	if !mayHoldPathToken(path) {
		return path
	}
	segs := strings.Split(path, "/")
	hidden := make([]bool, len(segs))
	hideFrom := func(i int) {
		for ; i < len(segs); i++ {
			hidden[i] = true
		}
	}
	if h, _, _ := strings.Cut(strings.ToLower(host), ":"); h == "hooks.slack.com" || h == "hooks.slack-gov.com" {
		if len(segs) > 4 && segs[0] == "" && (segs[1] == "services" || segs[1] == "workflows" || segs[1] == "triggers") {
			hideFrom(4)
		}
	}
	var telegram []int // segments whose token follows "bot<id>:"
	for i, seg := range segs {
		next := func(k int) string {
			if i+k < len(segs) {
				return segs[i+k]
			}
			return ""
		}
		switch {
		case strings.HasPrefix(seg, "bot"):
			if id, tok, ok := strings.Cut(seg[3:], ":"); ok && id != "" && isDigits(id) && tok != "" {
				telegram = append(telegram, i)
			}
		case seg == "services":
			if t, b := next(1), next(2); len(t) > 1 && t[0] == 'T' && len(b) > 1 && b[0] == 'B' && isUpperAlnum(t) && isUpperAlnum(b) && i+3 < len(segs) {
				hidden[i+3] = true
			}
		case seg == "webhooks":
			if id := next(1); id != "" && isDigits(id) && i+2 < len(segs) {
				hidden[i+2] = true
			}
		case seg == "key":
			if i > 0 && segs[i-1] == "with" && i+1 < len(segs) {
				hidden[i+1] = true
			}
		case seg == "IncomingWebhook":
			hideFrom(i + 1)
		case seg == "hooks":
			if next(1) == "catch" && i+3 < len(segs) {
				hidden[i+3] = true
			} else if id := next(1); len(id) == 26 && isLowerAlnum(id) {
				hidden[i+1] = true
			}
		}
	}
	var b strings.Builder
	b.Grow(len(path))
	for i, seg := range segs {
		if i > 0 {
			b.WriteByte('/')
		}
		switch {
		case hidden[i]:
			if seg == "" {
				break
			}
			b.WriteString(Placeholder)
			if seen != nil {
				seen(seg)
			}
		case contains(telegram, i):
			colon := strings.IndexByte(seg, ':')
			b.WriteString(seg[:colon+1])
			hide(&b, seg[colon+1:], seen)
		default:
			b.WriteString(seg)
		}
	}
	return b.String()
}

// contains reports whether s holds i.
func contains(s []int, i int) bool {
	for _, v := range s {
		if v == i {
			return true
		}
	}
	return false
}

// isUpperAlnum reports whether s holds only ASCII upper-case letters and
// digits, as Slack's team and bot ids do.
func isUpperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// isLowerAlnum reports whether s holds only ASCII lower-case letters and
// digits, as Mattermost's ids do.
func isLowerAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
