package redact

import (
	"slices"
	"strings"
	"testing"
)

// checkArgv runs Argv on every row of tests and checks the result, that
// the input was left alone, and that redacting again changes nothing.
func checkArgv(t *testing.T, r *Redactor, tests []struct{ in, want []string }) {
	t.Helper()
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		got := r.Argv(in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Argv(%q) =\n\t%q, want\n\t%q", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("Argv(%q) changed its argument to %q", tt.in, in)
		}
		if again := r.Argv(got); !slices.Equal(again, got) {
			t.Errorf("Argv(%q) = %q, but Argv of that = %q", tt.in, got, again)
		}
	}
}

// argv splits s at spaces, for short tables.
func argv(s string) []string { return strings.Split(s, " ") }

func TestArgvIssueExample(t *testing.T) {
	checkArgv(t, nil, []struct{ in, want []string }{
		{[]string{"curl", "-fsS", "-H", "Authorization: Bearer T0K", "http://u:PW@127.0.0.1:1/x/1?api_key=K"},
			[]string{"curl", "-fsS", "-H", "Authorization: REDACTED", "http://u:REDACTED@127.0.0.1:1/x/1?api_key=REDACTED"}},
	})
}

func TestArgvHeaders(t *testing.T) {
	checkArgv(t, nil, []struct{ in, want []string }{
		{[]string{"curl", "-H", "X-Api-Key: abc123", "-H", "Accept: text/plain", "https://h/"},
			[]string{"curl", "-H", "X-Api-Key: REDACTED", "-H", "Accept: text/plain", "https://h/"}},
		{[]string{"curl", "--header", "Cookie: sid=s3cr3t", "--proxy-header", "Proxy-Authorization: Basic dXA="},
			[]string{"curl", "--header", "Cookie: REDACTED", "--proxy-header", "Proxy-Authorization: REDACTED"}},
		// Attached and --flag=value forms.
		{[]string{"curl", "-HAuthorization: Bearer x1", "--header=X-Auth-Token:tok9", "--header=Accept: */*"},
			[]string{"curl", "-HAuthorization: REDACTED", "--header=X-Auth-Token:REDACTED", "--header=Accept: */*"}},
		// A header as one argument, as HTTPie and wget take them.
		{[]string{"http", "GET", "https://h/", "Authorization:Bearer abc", "X-API-Key:k3y", "Accept:json"},
			[]string{"http", "GET", "https://h/", "Authorization:REDACTED", "X-API-Key:REDACTED", "Accept:json"}},
		{[]string{"wget", "--header=Authorization: token ghp_abc", "https://h/"},
			[]string{"wget", "--header=Authorization: REDACTED", "https://h/"}},
		// A Referer holds a URL: redacted as one.
		{[]string{"curl", "-H", "Referer: https://h/?token=t1"}, []string{"curl", "-H", "Referer: https://h/?token=REDACTED"}},
		// Secret words without a dash before them (Supabase's apikey, Binance's X-MBX-APIKEY).
		{[]string{"curl", "-H", "apikey: sb1", "-H", "X-MBX-APIKEY: bn1", "-H", "Token: tk1", "-H", "X-Auth: xa1"},
			[]string{"curl", "-H", "apikey: REDACTED", "-H", "X-MBX-APIKEY: REDACTED", "-H", "Token: REDACTED", "-H", "X-Auth: REDACTED"}},
		// Empty values stay empty (curl -H 'Authorization:' removes the header).
		{[]string{"curl", "-H", "Authorization:"}, []string{"curl", "-H", "Authorization:"}},
		// Not headers.
		{argv("echo note: hello time: 12:30"), argv("echo note: hello time: 12:30")},
	})
}

func TestArgvUserAndTokens(t *testing.T) {
	checkArgv(t, nil, []struct{ in, want []string }{
		{argv("curl -u alice:s3cret https://h/"), argv("curl -u alice:REDACTED https://h/")},
		{argv("curl --user alice:s3cret https://h/"), argv("curl --user alice:REDACTED https://h/")},
		{argv("curl --user=alice:s3cret https://h/"), argv("curl --user=alice:REDACTED https://h/")},
		{argv("curl -ualice:s3cret https://h/"), argv("curl -ualice:REDACTED https://h/")},
		{argv("curl -U proxyuser:pw2 -x http://h:3128 https://h/"), argv("curl -U proxyuser:REDACTED -x http://h:3128 https://h/")},
		// An API key as the user name with an empty password.
		{argv("curl -u sk_live_abc: https://h/"), argv("curl -u REDACTED https://h/")},
		// A user name alone: curl asks for the password.
		{argv("curl -u alice https://h/"), argv("curl -u alice https://h/")},
		{argv("curl --oauth2-bearer ya29.tok https://h/"), argv("curl --oauth2-bearer REDACTED https://h/")},
		{argv("curl -b sid=abc123 https://h/"), argv("curl -b sid=REDACTED https://h/")},
		{argv("curl --cookie=sid=abc123;lang=en -bcookies.txt https://h/"), argv("curl --cookie=sid=REDACTED;lang=REDACTED -bcookies.txt https://h/")},
		{[]string{"curl", "--cookie", "sid=abc123; csrf=x9", "https://h/"}, []string{"curl", "--cookie", "sid=REDACTED; csrf=REDACTED", "https://h/"}},
		{argv("git checkout -b feature=x"), argv("git checkout -b feature=x")}, // -b is curl's only
		{argv("curl --oauth2-bearer=ya29.tok https://h/"), argv("curl --oauth2-bearer=REDACTED https://h/")},
		// A proxy with credentials and no scheme.
		{argv("curl -x bob:pw3@proxy:3128 https://h/"), argv("curl -x bob:REDACTED@proxy:3128 https://h/")},
		{argv("curl --proxy bob:pw3@proxy:3128 https://h/"), argv("curl --proxy bob:REDACTED@proxy:3128 https://h/")},
		// Long flags with secret names, with the value attached or next.
		{argv("tool --password=hunter2 --api-key k1 --token t2 --client-secret=c3 --verbose"),
			argv("tool --password=REDACTED --api-key REDACTED --token REDACTED --client-secret=REDACTED --verbose")},
		{argv("mysql --no-password -h db"), argv("mysql --no-password -h db")},
		// name=value arguments and form data.
		{argv("http POST https://h/ token=abc name=x"), argv("http POST https://h/ token=REDACTED name=x")},
		{argv("curl -d user=bob&password=pw4&x=1 https://h/"), argv("curl -d user=bob&password=REDACTED&x=1 https://h/")},
		{argv("env API_TOKEN=t5 DEBUG=1 curl https://h/"), argv("env API_TOKEN=REDACTED DEBUG=1 curl https://h/")},
		{argv("env PGPASSWORD=p6 MYSQL_PWD=p7 PWD=/x psql"), argv("env PGPASSWORD=REDACTED MYSQL_PWD=REDACTED PWD=/x psql")},
		{argv("env REDISCLI_AUTH=ra1 redis-cli ping"), argv("env REDISCLI_AUTH=REDACTED redis-cli ping")},
		{[]string{"sh", "-c", "REDISCLI_AUTH=ra2 redis-cli ping"}, []string{"sh", "-c", "REDISCLI_AUTH=REDACTED redis-cli ping"}},
		{argv("oha --basic-auth u:ba3 http://h/"), argv("oha --basic-auth REDACTED http://h/")},
		{argv("curl -E cert.pem:p8 https://h/"), argv("curl -E cert.pem:REDACTED https://h/")},
		{argv("grep -E a:b f"), argv("grep -E a:b f")},
		// URLs without a scheme.
		{argv("curl example.com/x?api_key=K2&page=1"), argv("curl example.com/x?api_key=REDACTED&page=1")},
		// Ordinary arguments stay.
		{argv("sort -u -k 2 in.txt"), argv("sort -u -k 2 in.txt")},
		{argv("ssh deploy@host uptime"), argv("ssh deploy@host uptime")},
		{argv("echo a=b --x=y"), argv("echo a=b --x=y")},
	})
}

func TestArgvPrograms(t *testing.T) {
	checkArgv(t, nil, []struct{ in, want []string }{
		{argv("http -a bob:pw5 GET https://h/"), argv("http -a bob:REDACTED GET https://h/")},
		{argv("redis-cli -a pw6 PING"), argv("redis-cli -a REDACTED PING")},
		{argv("timeout 5 redis-cli -h h -a pw6 PING"), argv("timeout 5 redis-cli -h h -a REDACTED PING")},
		{argv("mysql -upace -ppw7 db"), argv("mysql -upace -pREDACTED db")},
		{argv("sshpass -p pw8 ssh host"), argv("sshpass -p REDACTED ssh host")},
		// Elsewhere -a and -p mean other things.
		{argv("cp -a src dst"), argv("cp -a src dst")},
		{argv("ssh -p 22 host"), argv("ssh -p 22 host")},
	})
}

func TestArgvShellScripts(t *testing.T) {
	checkArgv(t, nil, []struct{ in, want []string }{
		{[]string{"sh", "-c", `curl -fsS -H "Authorization: Bearer T0K" 'http://u:PW@h/x?api_key=K' | jq .`},
			[]string{"sh", "-c", `curl -fsS -H "Authorization: REDACTED" 'http://u:REDACTED@h/x?api_key=REDACTED' | jq .`}},
		{[]string{"sh", "-c", "curl -u 'alice:pw9' --token t10 https://h/\necho done"},
			[]string{"sh", "-c", "curl -u 'alice:REDACTED' --token REDACTED https://h/\necho done"}},
		{[]string{"bash", "-c", `curl -d '{"password": "pw11", "user": "bob"}' https://h/`},
			[]string{"bash", "-c", `curl -d '{"password": "REDACTED", "user": "bob"}' https://h/`}},
	})
}

func TestArgvKnownSecretsAndExtras(t *testing.T) {
	r := New("tenant").With("sekrit-value")
	checkArgv(t, r, []struct{ in, want []string }{
		{argv("prog sekrit-value https://h/?tenant=acme"), argv("prog REDACTED https://h/?tenant=REDACTED")},
	})
}

// TestArgvSecretsGone: no value the rules hide survives anywhere in the
// redacted argv.
func TestArgvSecretsGone(t *testing.T) {
	in := []string{"curl", "-H", "Authorization: Bearer S1-xyz", "-u", "me:S2-xyz", "--oauth2-bearer", "S3-xyz",
		"http://u:S4-xyz@h/?api_key=S5-xyz", "--password=S6-xyz", "-x", "p:S7-xyz@proxy:1",
		"https://api.telegram.org/bot1:S8-xyz/getMe", "sh -c 'curl -H \"X-Api-Key: S9-xyz\"'"}
	got := strings.Join(New().Argv(in), " ")
	if strings.Contains(got, "-xyz") {
		t.Errorf("Argv(%q) = %q, holds a secret", in, got)
	}
}

func TestAddArgv(t *testing.T) {
	r := New().With()
	r.AddArgv([]string{"curl", "-H", "Authorization: Bearer tok-123", "-u", "me:pw-456", "http://h/?key=k-789"})
	got := r.String("exec: tok-123 pw-456 k-789: failed")
	if got != "exec: REDACTED REDACTED REDACTED: failed" {
		t.Errorf("after AddArgv, String = %q", got)
	}
}

func TestArgvNil(t *testing.T) {
	if got := New().Argv(nil); len(got) != 0 {
		t.Errorf("Argv(nil) = %q", got)
	}
}

// BenchmarkArgv redacts a typical command, as every job log row and -v
// line of pace run does.
func BenchmarkArgv(b *testing.B) {
	argv := []string{"curl", "-fsS", "-H", "Authorization: Bearer T0K", "-o", "out/1.json", "https://api.example.com/items/1?page=2"}
	r := New()
	b.ReportAllocs()
	for b.Loop() {
		r.Argv(argv)
	}
}

// BenchmarkArgvPlain redacts a command with nothing to hide.
func BenchmarkArgvPlain(b *testing.B) {
	argv := []string{"sh", "-c", "echo $1 >> out", "sh", "item-42"}
	r := New()
	b.ReportAllocs()
	for b.Loop() {
		r.Argv(argv)
	}
}

// TestArgvBareUserinfo: a URL without a scheme that starts with
// user:password@ (curl takes one) has its password hidden; e-mail, ssh,
// git and image addresses, and opaque URIs, stay as they are.
func TestArgvBareUserinfo(t *testing.T) {
	checkArgv(t, nil, []struct{ in, want []string }{
		{argv("curl u:pw1@127.0.0.1/x"), argv("curl u:REDACTED@127.0.0.1/x")},
		{argv("curl u:pw%40two@example.com:8080"), argv("curl u:REDACTED@example.com:8080")},
		{argv("curl u:pw3@[::1]:80/x?token=t3"), argv("curl u:REDACTED@[::1]:80/x?token=REDACTED")},
		{argv("wget u:p@w4@db.internal/dump"), argv("wget u:REDACTED@db.internal/dump")},
		{argv("curl sk_live_5:@api.stripe.com/v1"), argv("curl REDACTED@api.stripe.com/v1")},
		{[]string{"sh", "-c", "curl 'u:pw6@host' | jq ."}, []string{"sh", "-c", "curl 'u:REDACTED@host' | jq ."}},
		// Not URLs with a password.
		{argv("mail bob@example.com"), argv("mail bob@example.com")},
		{argv("xdg-open mailto:bob@example.com"), argv("xdg-open mailto:bob@example.com")},
		{argv("ssh deploy@host uptime"), argv("ssh deploy@host uptime")},
		{argv("git clone git@github.com:org/repo.git"), argv("git clone git@github.com:org/repo.git")},
		{argv("docker pull nginx:1.25@sha256:0123abcd"), argv("docker pull nginx:1.25@sha256:0123abcd")},
		{argv("npm i @scope/pkg@1.2.3 a:b/c@d"), argv("npm i @scope/pkg@1.2.3 a:b/c@d")},
		{argv("echo a:b@c..d a:b@host:port"), argv("echo a:b@c..d a:b@host:port")},
		// Times, versions and name=value words that look the same.
		{argv("at 10:30@home time=12:00@UTC --label=app:web@v1 pkg:foo@1.2"),
			argv("at 10:30@home time=12:00@UTC --label=app:web@v1 pkg:foo@1.2")},
		// Still URLs: a single-label host alone, or with a port or a
		// path; a dotted host after '='; an address; an API key of digits.
		{argv("curl u:pw8@myhost u:pw9@myhost:8080 u:pw10@myhost/x"),
			argv("curl u:REDACTED@myhost u:REDACTED@myhost:8080 u:REDACTED@myhost/x")},
		{argv("run url=u:pw11@api.example.com --proxy-url=u:pw12@localhost 10:30@10.0.0.1 12345:@api.example.com"),
			argv("run url=u:REDACTED@api.example.com --proxy-url=u:REDACTED@localhost 10:REDACTED@10.0.0.1 REDACTED@api.example.com")},
		// A URL given to -u is redacted as a URL, not as user:password.
		{argv("redis-cli -u redis://:pw7@h ping"), argv("redis-cli -u redis://:REDACTED@h ping")},
	})
}
