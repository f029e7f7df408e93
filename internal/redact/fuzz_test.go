package redact

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzRedact checks that redaction never panics and is idempotent:
// redacting its own output changes nothing. It also checks that a known
// secret never survives String, except where it overlaps a placeholder.
func FuzzRedact(f *testing.F) {
	f.Add("https://alice:s3cret@h/x?api_key=k&page=2#access_token=t", "s3cret", "page")
	f.Add("redis://u:12#ret@h:1", "Bearer abc", "")
	f.Add(`Get "http://bob:pa ss@host/x": EOF (from http://u:p@x/)`, "pa ss", "x")
	f.Add("http://h/ zz?token=abc", " zz", "")
	f.Add("bob:hunter2@host/x;jsessionid=1?a=1;token=2&amp;sig=3", "xRE", "a")
	f.Add("https://h/login?next=https://u:p@h2/?sig=1&b=https://x:y@z", "ACTED", "b")
	f.Add("http://[::1/x?token=abc", "::1", "")
	f.Add("https://api.telegram.org/bot1:a;b/x https://hooks.slack.com/services/T/B/c/d", "bot1:a", "")
	f.Add("https://x/IncomingWebhook/services/T1/B1/webhooks/2/hooks/catch/3/4/with/key/k", "T1", "")
	f.Add("https://h/hooks/abcdefghijklmnopqrstuvwxyz/webhooks/12/bot3:REDACTED", "", "")
	f.Add("http://h/s?next=http%3A%2F%2Fu%3APWENC%40h%2Fx%3Ftoken%3DTOKENC&b=1", "PWENC", "b")
	f.Add("https://h/?a=https%3A%2F%2Fh2%2F%3Fb%3Dhttp%253A%252F%252Fu%253AIN%2540ER%2540h3", "IN@ER", "")
	f.Add("https://h/?n=http%3a//REDACTED%40h%2F%3Fsig%3D%zz+x&m=%3A%2F%2F", "%zz", "m")
	f.Fuzz(func(t *testing.T, s, secret, extra string) {
		r := New(extra)
		if got := r.RawURL(s); r.RawURL(got) != got {
			t.Errorf("RawURL(%q) = %q, but RawURL(%q) = %q", s, got, got, r.RawURL(got))
		}
		if got := r.Text(s); r.Text(got) != got {
			t.Errorf("Text(%q) = %q, but Text(%q) = %q", s, got, got, r.Text(got))
		}
		if u, err := url.Parse(s); err == nil {
			if got := r.URL(u); r.RawURL(got) != got {
				t.Errorf("URL(%q) = %q, but RawURL(%q) = %q", s, got, got, r.RawURL(got))
			}
		}
		k := r.With(secret)
		got := k.String(s)
		if again := k.String(got); again != got {
			t.Errorf("With(%q).String(%q) = %q, but String(%q) = %q", secret, s, got, got, again)
		}
		if len(secret) >= minSecretLen && strings.Contains(strings.ReplaceAll(got, Placeholder, "\x00"), secret) {
			t.Errorf("With(%q).String(%q) = %q, holds the secret outside placeholders", secret, s, got)
		}
	})
}

// fuzzSchemes are the schemes FuzzSecretValue builds URLs with.
var fuzzSchemes = []string{"https", "http", "redis", "rediss", "unix", "ftp"}

// urlSafe are the bytes FuzzSecretValue makes secret values of: those
// that no URL needs to escape.
const urlSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"

// FuzzSecretValue builds URLs that hold a secret value, made of URL-safe
// bytes, in a password, a user name alone, a secret parameter in the
// query, the fragment or the path, or a token in the path (Telegram,
// Slack, Discord), around fuzzed text; the value must not survive RawURL
// or Text, nor String once AddURL has recorded it.
func FuzzSecretValue(f *testing.F) {
	f.Add(uint8(0), uint8(0), []byte("hunter22hunter22"), "alice", "h:6379/0")
	f.Add(uint8(1), uint8(0), []byte("ghp_abcdefgh1234"), "", "github.com/o/r")
	f.Add(uint8(2), uint8(3), []byte("AKIAIOSFODNN7EXAMPLE"), "X-Amz-Date=20240101T000000Z", "X-Amz-Expires=900")
	f.Add(uint8(3), uint8(7), []byte("ya29.a0AfH6SMB"), "x=1", "token_type=bearer")
	f.Add(uint8(4), uint8(9), []byte("ABCDEF0123456789"), "app", "page?x=1")
	f.Add(uint8(5), uint8(0), []byte("s3cret-passw0rd"), "u", "h:1?db=1")
	f.Add(uint8(6), uint8(0), []byte("AAH-abcdefgh_12"), "", "sendMessage?chat_id=1")
	f.Add(uint8(7), uint8(1), []byte("XXXXXXXXXXXXXXXX"), "", "")
	f.Add(uint8(8), uint8(2), []byte("AbC-dEf_1234567"), "api", "?wait=true")
	f.Fuzz(func(t *testing.T, pos, nameIndex uint8, value []byte, before, after string) {
		if len(value) < 8 {
			return
		}
		v := make([]byte, len(value))
		for i, c := range value {
			v[i] = urlSafe[int(c)%len(urlSafe)]
		}
		secret := string(v)
		r := New("My-Param")
		names := append([]string{"MY-PARAM"}, secretParamNames...)
		name := names[int(nameIndex)%len(names)]
		scheme := fuzzSchemes[int(nameIndex)%len(fuzzSchemes)]
		var build func(v string) string
		switch pos % 9 {
		case 0: // password
			if strings.ContainsAny(before, "/?#@:") {
				return
			}
			build = func(v string) string { return scheme + "://" + before + ":" + v + "@" + after }
		case 1: // user name alone
			build = func(v string) string { return scheme + "://" + v + "@" + after }
		case 2: // query
			build = func(v string) string { return scheme + "://h.example/p?" + before + "&" + name + "=" + v + "&" + after }
		case 3: // fragment
			build = func(v string) string { return scheme + "://h.example/p#" + before + "&" + name + "=" + v + "&" + after }
		case 4: // path parameter
			build = func(v string) string { return scheme + "://h.example/" + before + ";" + name + "=" + v + "/" + after }
		case 5: // password in a URL without a scheme
			if strings.ContainsAny(before, "/?#@:") {
				return
			}
			build = func(v string) string { return before + ":" + v + "@" + after }
		case 6: // Telegram bot token
			if strings.ContainsAny(before, "?#") {
				return
			}
			build = func(v string) string { return scheme + "://h.example/" + before + "/bot12345:" + v + "/" + after }
		case 7: // Slack webhook
			build = func(v string) string { return scheme + "://hooks.slack.com/services/T0/B0/" + v + "/" + after }
		case 8: // Discord webhook
			if strings.ContainsAny(before, "?#") {
				return
			}
			build = func(v string) string { return scheme + "://h.example/" + before + "/webhooks/123/" + v + "/" + after }
		}
		raw := build(secret)
		if strings.Contains(build(""), secret) {
			return // the value is also somewhere else
		}
		// holds reports whether out holds the secret outside placeholders.
		holds := func(out string) bool {
			return strings.Contains(strings.ReplaceAll(out, Placeholder, "\x00"), secret)
		}
		if got := r.RawURL(raw); holds(got) {
			t.Errorf("RawURL(%q) = %q, holds %q", raw, got, secret)
		}
		if pos%9 != 5 && !strings.ContainsAny(raw, "\"\\\n") {
			in := `Get "` + raw + `": EOF`
			if got := r.Text(in); holds(got) {
				t.Errorf("Text(%q) = %q, holds %q", in, got, secret)
			}
		}
		if pos%9 != 5 && !strings.ContainsFunc(raw, func(c rune) bool { return c < 0x80 && isURLStop(byte(c)) }) {
			in := "see " + raw + "."
			if got := r.Text(in); holds(got) {
				t.Errorf("Text(%q) = %q, holds %q", in, got, secret)
			}
		}
		// When URL hides the value whole, AddURL records it.
		if u, err := url.Parse(raw); err == nil {
			var hidden []string
			r.rawURL(u.String(), 0, func(v string) { hidden = append(hidden, v) })
			if slices.Contains(hidden, secret) {
				k := r.With()
				k.AddURL(u)
				in := "failed: " + secret + "."
				if got := k.String(in); holds(got) {
					t.Errorf("after AddURL(%q), String(%q) = %q", raw, in, got)
				}
			}
		}
	})
}

// FuzzEncodedURL puts a secret value, made of URL-safe bytes, in the
// password, the user name or a secret parameter of a URL that another
// URL's parameter holds percent-encoded (?next=https%3A%2F%2F...), around
// fuzzed text. The value must not survive RawURL, and the rest must be
// kept byte for byte: the output is the input with Placeholder for the
// value.
func FuzzEncodedURL(f *testing.F) {
	f.Add(uint8(0), []byte("hunter22hunter22"), "h2", "x?a=1", false)
	f.Add(uint8(1), []byte("ghp_abcdefgh1234"), "github.com", "o/r", true)
	f.Add(uint8(2), []byte("ya29.a0AfH6SMB"), "page=2", "b=3", false)
	f.Add(uint8(3), []byte("ABCDEF0123456789"), "state=x", "", true)
	f.Fuzz(func(t *testing.T, pos uint8, value []byte, before, after string, lower bool) {
		if len(value) < 8 || strings.ContainsFunc(before+after, func(c rune) bool { return !strings.ContainsRune(urlSafe+"/?=", c) }) {
			return // delimiters around the value would move it
		}
		v := make([]byte, len(value))
		for i, c := range value {
			v[i] = urlSafe[int(c)%len(urlSafe)]
		}
		secret := string(v)
		var inner func(v string) string
		switch pos % 4 {
		case 0: // password
			inner = func(v string) string { return "https://user:" + v + "@" + before + "/" + after }
		case 1: // user name alone
			inner = func(v string) string { return "https://" + v + "@" + before + "/" + after }
		case 2: // query
			inner = func(v string) string { return "https://h2/p?" + before + "&token=" + v + "&" + after }
		case 3: // fragment
			inner = func(v string) string { return "https://h2/p#" + before + "&access_token=" + v + "&" + after }
		}
		build := func(v string) string {
			e := url.QueryEscape(inner(v))
			if lower {
				e = strings.NewReplacer("%3A", "%3a", "%2F", "%2f", "%3F", "%3f", "%3D", "%3d").Replace(e)
			}
			return "https://h.example/cb?x=1&next=" + e + "&y=2"
		}
		if strings.Contains(build(""), secret) {
			return
		}
		raw := build(secret)
		got := New().RawURL(raw)
		if strings.Contains(strings.ReplaceAll(got, Placeholder, "\x00"), secret) {
			t.Errorf("RawURL(%q) = %q, holds %q", raw, got, secret)
		}
		if want := build(Placeholder); got != want {
			t.Errorf("RawURL(%q) = %q, want %q", raw, got, want)
		}
	})
}

// FuzzArgv checks that Argv never panics, is idempotent and leaves its
// argument alone, over arguments made of fuzzed text (split at '|'); and
// that a secret value, made of URL-safe bytes, put where a command line
// holds credentials, does not survive it.
func FuzzArgv(f *testing.F) {
	f.Add("curl|-H|Authorization: Bearer x|-u|a:b|http://u:p@h/?api_key=k", uint8(0), []byte("T0K-abcdefgh"), "before", "after")
	f.Add("sh|-c|curl -H 'Cookie: a=b' -u 'u:p' --token t https://h/bot1:x/y", uint8(1), []byte("PW-abcdefgh"), "-v", "")
	f.Add(`x|{"password": "p\"q", "a":"b"}|--key=|-pass|-H`, uint8(2), []byte("K-abcdefgh"), "", "--x=1")
	f.Add("mysql|-p|-pabc|redis-cli|-a|x|-x|u:p@h|--proxy", uint8(3), []byte("abcdefgh"), "'", "\"")
	f.Add("|||-u|", uint8(4), []byte("abcdefghij"), "Authorization:", "X-Api-Key: v")
	f.Add("http|-a|b", uint8(5), []byte("abcdefghij"), "a b", "c\nd")
	f.Fuzz(func(t *testing.T, args string, pos uint8, value []byte, before, after string) {
		r := New()
		in := strings.Split(args, "|")
		keep := slices.Clone(in)
		got := r.Argv(in)
		if !slices.Equal(in, keep) {
			t.Fatalf("Argv(%q) changed its argument", keep)
		}
		if again := r.Argv(got); !slices.Equal(again, got) {
			t.Errorf("Argv(%q) = %q, but Argv of that = %q", in, got, again)
		}
		if len(value) < 8 {
			return
		}
		v := make([]byte, len(value))
		for i, c := range value {
			v[i] = urlSafe[int(c)%len(urlSafe)]
		}
		secret := string(v)
		var build func(v string) []string
		switch pos % 8 {
		case 0:
			build = func(v string) []string { return []string{"curl", before, "-H", "Authorization: Bearer " + v, after} }
		case 1:
			build = func(v string) []string { return []string{"curl", before, "-u", "user:" + v, after} }
		case 2:
			build = func(v string) []string { return []string{"prog", before, "--password=" + v, after} }
		case 3:
			build = func(v string) []string { return []string{"prog", before, "--api-key", v, after} }
		case 4:
			build = func(v string) []string { return []string{"curl", before, "--oauth2-bearer", v, after} }
		case 5:
			build = func(v string) []string { return []string{"curl", before, "http://u:" + v + "@h/", after} }
		case 6:
			if strings.ContainsAny(before+after, "'\n") {
				return
			}
			build = func(v string) []string {
				return []string{"sh", "-c", "curl " + before + " -H 'X-Api-Key: " + v + "' " + after}
			}
		case 7:
			build = func(v string) []string { return []string{"curl", before, "-d", "a=1&token=" + v, after} }
		}
		if strings.Contains(strings.Join(build(""), "\x00"), secret) {
			return
		}
		in = build(secret)
		out := strings.ReplaceAll(strings.Join(r.Argv(in), "\x00"), Placeholder, "\x01")
		if strings.Contains(out, secret) {
			t.Errorf("Argv(%q) = %q, holds %q", in, r.Argv(in), secret)
		}
	})
}
