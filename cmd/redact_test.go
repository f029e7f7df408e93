package cmd

import (
	"strings"
	"testing"

	"github.com/pace-cli/pace/runner"
)

func TestRedactLogged(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		// A row written before commands were redacted.
		{"curl -H 'Authorization: Bearer T0K' 'http://u:PW@h/?api_key=K'", "curl -H 'Authorization: REDACTED' 'http://u:REDACTED@h/?api_key=REDACTED'"},
		// Rows as pace writes them now stay as they are.
		{"curl -H 'Authorization: REDACTED' https://h/", "curl -H 'Authorization: REDACTED' https://h/"},
		{"echo 'a  b' --x=1", "echo 'a  b' --x=1"},
		// A row an earlier pace wrote redacted, when apikey: was no
		// secret header and user:pw@host no URL: redacted as now, or a
		// resumed run finds its input changed (and shows the key).
		{"curl -H 'Authorization: REDACTED' -H 'apikey: K9' u:PW@h/x", "curl -H 'Authorization: REDACTED' -H 'apikey: REDACTED' u:REDACTED@h/x"},
		{"sh -c 'REDISCLI_AUTH=PW redis-cli -a REDACTED ping'", "sh -c 'REDISCLI_AUTH=REDACTED redis-cli -a REDACTED ping'"},
		// pace fetch's rows (METHOD URL, not quoted) and GNU parallel's.
		{"GET http://u:REDACTED@h/x?a=1&b=2", "GET http://u:REDACTED@h/x?a=1&b=2"},
		{"curl  --token tok1  http://h/", "curl  --token REDACTED  http://h/"},
	} {
		if got := redactLogged(tt.in); got != tt.want {
			t.Errorf("redactLogged(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestShownItem(t *testing.T) {
	job := &runner.Job{Item: "tok-123", Argv: []string{"curl", "-H", "Authorization: Bearer tok-123", "https://h/"}}
	if got := shownItem(job, job.Item); got != "REDACTED" {
		t.Errorf("shownItem(%q) = %q, want REDACTED", job.Item, got)
	}
	job = &runner.Job{Item: "http://u:pw@h/", Argv: []string{"curl", "http://u:pw@h/"}}
	if got := shownItem(job, job.Item); got != "http://u:REDACTED@h/" {
		t.Errorf("shownItem(%q) = %q", job.Item, got)
	}
	// The item holds a credential and more: the credential is hidden.
	job = &runner.Job{Item: "alice:TOPSECRET", Argv: []string{"curl", "-s", "-u", "alice:TOPSECRET", "http://h/"}}
	if got := shownItem(job, job.Item); strings.Contains(got, "TOPSECRET") {
		t.Errorf("shownItem(%q) = %q, shows the password", job.Item, got)
	}
	job = &runner.Job{Item: "a b", Argv: []string{"echo", "a b"}}
	if got := shownItem(job, job.Item); got != "a b" {
		t.Errorf("shownItem(%q) = %q", job.Item, got)
	}
}

// BenchmarkRedactLogged reads back one job log row's Command, as a
// resumed run does for every row of its log.
func BenchmarkRedactLogged(b *testing.B) {
	line := "curl -fsS -H 'Authorization: REDACTED' -o out/1.json 'https://api.example.com/items/1?page=2'"
	b.ReportAllocs()
	for b.Loop() {
		redactLogged(line)
	}
}
