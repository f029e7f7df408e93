package limiter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

func TestOutageMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		o := &outageWriter{w: &out, url: "redis://u:REDACTED@h:1", timeout: 30 * time.Second}
		since := time.Now()
		o.report(redisrate.Outage{Down: true, Since: since, Err: errors.New("dial tcp redis://u:secretpw@h:1: connection refused")})
		time.Sleep(2500 * time.Millisecond)
		o.report(redisrate.Outage{Down: false, Since: since})
		since = time.Now()
		time.Sleep(time.Second)
		o.report(redisrate.Outage{Down: true, Since: since})
		time.Sleep(time.Second)
		o.report(redisrate.Outage{Down: false, Since: since})
		since = time.Now()
		o.report(redisrate.Outage{Down: true, Since: since, Refused: true, Err: errors.New("READONLY You can't write against a read only replica.")})
		time.Sleep(3 * time.Second)
		o.report(redisrate.Outage{Down: false, Since: since, Refused: true})
		want := "pace: redis redis://u:REDACTED@h:1 is not answering (dial tcp redis://u:REDACTED@h:1: connection refused); starting no job until it does, for up to 30s\n" +
			"pace: redis redis://u:REDACTED@h:1 is answering again after 2.5s; going on\n" +
			"pace: redis redis://u:REDACTED@h:1 is not answering (no reply for 1s); starting no job until it does, for up to 30s\n" +
			"pace: redis redis://u:REDACTED@h:1 is answering again after 2s; going on\n" +
			"pace: redis redis://u:REDACTED@h:1 refuses to record admissions (READONLY You can't write against a read only replica.); starting no job until it does, for up to 30s\n" +
			"pace: redis redis://u:REDACTED@h:1 records admissions again after 3s; going on\n"
		if out.String() != want {
			t.Errorf("messages:\n%s\nwant:\n%s", out.String(), want)
		}
	})
}

func TestLossMessage(t *testing.T) {
	var out strings.Builder
	o := &outageWriter{w: &out, url: "redis://u:REDACTED@h:1", timeout: 30 * time.Second}
	last := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o.lost("api")(redisrate.Loss{Last: last, At: last.Add(12 * time.Second), Window: time.Minute, Restored: 7})
	o.lost("api")(redisrate.Loss{Last: last, At: last.Add(50 * time.Millisecond), Window: time.Minute, Restored: 1})
	want := `pace: redis redis://u:REDACTED@h:1 lost quota "api", which held a call of this process 12s before ` +
		`(Redis restarted without persistence, was flushed, evicted keys or failed over): ` +
		"recorded again 7 calls of this process that it still counts; " +
		"the calls of processes that have exited or admitted nothing since are forgotten, " +
		"and the fleet may go over a rule for the next 48s\n" +
		`pace: redis redis://u:REDACTED@h:1 lost quota "api", which held a call of this process 50ms before ` +
		`(Redis restarted without persistence, was flushed, evicted keys or failed over): ` +
		"recorded again 1 call of this process that it still counts; " +
		"the calls of processes that have exited or admitted nothing since are forgotten, " +
		"and the fleet may go over a rule for the next 1m\n"
	if out.String() != want {
		t.Errorf("message:\n%s\nwant:\n%s", out.String(), want)
	}
}

func rules(t *testing.T, spec string) []throttle.Rule {
	t.Helper()
	r, err := throttle.ParseRules(spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOpenInMemory: without a shared quota, the in-memory limiter with
// the options' rules.
func TestOpenInMemory(t *testing.T) {
	b, err := Open(context.Background(), Options{Rules: rules(t, "2/s")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if st := b.Stats(); len(st.Rules) != 1 || st.Rules[0].Rule.N != 2 {
		t.Errorf("Stats().Rules = %+v, want the one rule 2/s", st.Rules)
	}
}

// TestOpenLocalMismatch: a local quota kept with other rules is refused
// with a message that says what to agree on, and how to forget it in the
// same --state; the error is still a *throttle.MismatchError.
func TestOpenLocalMismatch(t *testing.T) {
	dir := t.TempDir()
	var said strings.Builder
	sh := Shared{Key: "api", Local: true, State: dir}
	b, err := Open(context.Background(), Options{Rules: rules(t, "5/s"), Shared: sh, Verbose: true}, &said)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A quota in use: a call inside its window.
	if err := throttle.Do(context.Background(), b, 1, func(*throttle.Admission) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if want := `pace: local quota "api" in ` + dir + "\n"; said.String() != want {
		t.Errorf("verbose: %q, want %q", said.String(), want)
	}
	_, err = Open(context.Background(), Options{Rules: rules(t, "6/s"), Shared: sh}, &said)
	if !errors.As(err, new(*throttle.MismatchError)) {
		t.Fatalf("Open with other rules = %v, want a *throttle.MismatchError", err)
	}
	for _, want := range []string{`local quota "api" in ` + dir + ` is kept with rules "5/s", this process has "6/s"`,
		"pace quota reset --key api --state " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
