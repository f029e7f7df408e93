package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/quota"
	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Tests of pace quota show and reset, in process, against quotas that
// the backends' own packages fill.

func parseQuota(t *testing.T, args ...string) (*QuotaOptions, error) {
	t.Helper()
	return parseFlags(t, NewCmdQuota, args...)
}

func TestQuotaFlagsToOptions(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	o, err := parseQuota(t, "show", "--key", "gh", "--state", "/tmp/st", "--json")
	if err != nil || o.Action != "show" || o.Key != "gh" || o.State != "/tmp/st" || !o.JSON || o.RedisURL != "" {
		t.Errorf("quota show: %+v, %v", o, err)
	}
	o, err = parseQuota(t, "reset", "--key", "gh", "--redis", "redis://h:1", "-y")
	if err != nil || o.Action != "reset" || o.Key != "gh" || !o.Yes || o.RedisURL != "redis://h:1" {
		t.Errorf("quota reset: %+v, %v", o, err)
	}
	t.Setenv(redisURLEnv, "redis://u:pw@h:2")
	o, err = parseQuota(t, "show")
	if err != nil || o.RedisURL != "redis://u:pw@h:2" {
		t.Errorf("quota show with $%s: %+v, %v", redisURLEnv, o, err)
	}
	o, err = parseQuota(t, "show", "--redis=")
	if err != nil || o.RedisURL != "" {
		t.Errorf("quota show --redis=: %+v, %v", o, err)
	}

	// A name an older pace took (longer than redisrate.MaxKeyLen, or with
	// control characters) can still be shown and reset.
	for _, key := range []string{strings.Repeat("k", 300), "a\nb"} {
		o, err = parseQuota(t, "reset", "--key", key, "--redis", "redis://h:1", "-y")
		if err == nil {
			err = o.check()
		}
		if err != nil {
			t.Errorf("quota reset --key %q: %v, want it allowed", key, err)
		}
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"quota", "reset", "--yes"}, "pace: pace quota reset needs --key NAME, the quota to forget; pace quota show lists them"},
		{[]string{"quota", "show", "--state", "d", "--redis", "redis://u:hunter2pw@h:1"}, `pace: --state is the local store's directory, but "--redis" keeps quotas in Redis`},
		{[]string{"quota", "show", "--redis", "redis://u:hunter2pw@h:notaport"}, `pace: invalid "--redis": `},
		{[]string{"quota", "show", "extra"}, `pace: unknown command "extra" for "pace quota show"`},
		{[]string{"quota", "bogus"}, `pace: unknown command "bogus" for "pace quota": want show or reset`},
	} {
		code, stdout, stderr := execPace(t, "", tt.args...)
		if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, tt.want) || strings.Count(stderr, "\n") != 2 || strings.Contains(stderr, "hunter2pw") {
			t.Errorf("pace %q = %d, stderr %q; want 2 and %q, then where the usage is", tt.args, code, stderr, tt.want)
		}
	}
}

// fillLocal records calls of cost 1 in the quota key of dir, kept with
// rules and globalJobs, and returns the open store (closed with t).
func fillLocal(t *testing.T, dir, key, rules string, globalJobs, calls int) *localstore.Store {
	t.Helper()
	rs, err := throttle.ParseRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	s, err := localstore.Open(context.Background(), localstore.Options{Dir: dir, Key: key, Rules: rs, GlobalJobs: globalJobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for range calls {
		a, err := s.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	return s
}

func TestQuotaShowLocal(t *testing.T) {
	dir := t.TempDir()
	fillLocal(t, dir, "gh", "3/h,10/min", 0, 3).Close()
	s := fillLocal(t, dir, "jobs", "100/s", 2, 1)
	held, err := s.Admit(context.Background(), 1) // a slot held by this process
	if err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := execPace(t, "", "quota", "show", "--key", "gh", "--state", dir)
	want := []string{
		`^quota gh \(local ` + regexp.QuoteMeta(filepath.Join(dir, "gh.db")) + `\)$`,
		`^  rules +10/m,3/h$`,
		`^  rule 10/m +3/10 used +30%$`,
		`^  rule 3/h +3/3 used +100%$`,
		`^  next call +in (59m[0-9]+s|1h0m0s) \([0-9:.]+\)$`,
	}
	checkLines(t, "quota show --key gh", code, stdout, stderr, want)

	code, stdout, stderr = execPace(t, "", "quota", "show", "--key", "jobs", "--state", dir)
	want = []string{
		`^  rules +100/s global-jobs=2$`,
		`^  next call +now$`,
		`^  slots +1 of 2 held$`,
		`^  slot [01] +pid ` + strconv.Itoa(os.Getpid()) + `, since [0-9:]+ \([0-9.]+[mµ]?s ago\), alive$`,
	}
	checkLines(t, "quota show --key jobs", code, stdout, stderr, want)

	// --json, every quota: an array.
	code, stdout, stderr = execPace(t, "", "quota", "show", "--state", dir, "--json")
	var views []quota.View
	if err := json.Unmarshal([]byte(stdout), &views); code != 0 || err != nil || len(views) != 2 {
		t.Fatalf("quota show --json = %d, %v:\n%s%s", code, err, stdout, stderr)
	}
	gh, jobs := views[0], views[1]
	if gh.Key != "gh" || gh.Store != "local" || gh.Spec != "10/m,3/h" || gh.Idle || len(gh.Rules) != 2 ||
		gh.Rules[1].Rule != "3/h" || gh.Rules[1].Used != 3 || gh.Rules[1].N != 3 || gh.Rules[1].Window != 3600 || gh.Rules[1].Usage != 1 ||
		gh.NextIn < 3500 || len(gh.Slots) != 0 {
		t.Errorf("gh = %+v", gh)
	}
	if jobs.Key != "jobs" || jobs.GlobalJobs != 2 || len(jobs.Slots) != 1 || !jobs.Slots[0].Alive || jobs.Slots[0].PID != os.Getpid() ||
		jobs.Slots[0].Since == nil || jobs.NextIn != 0 {
		t.Errorf("jobs = %+v", jobs)
	}

	// Released: the slot is free, and not shown.
	held.Release()
	code, stdout, stderr = execPace(t, "", "quota", "show", "--key", "jobs", "--state", dir, "--json")
	var one quota.View
	if err := json.Unmarshal([]byte(stdout), &one); code != 0 || err != nil || len(one.Slots) != 0 {
		t.Errorf("after release: %d, %v, %+v (%s)", code, err, one, stderr)
	}

	// No such quota; an empty directory.
	code, _, stderr = execPace(t, "", "quota", "show", "--key", "nope", "--state", dir)
	if code != ExitFailed || !strings.HasPrefix(stderr, `pace: no quota "nope" in `+dir) {
		t.Errorf("no such quota: %d, %q; want 1", code, stderr)
	}
	empty := filepath.Join(dir, "empty")
	code, stdout, stderr = execPace(t, "", "quota", "show", "--state", empty)
	if code != 0 || stdout != "" || stderr != "pace: no quotas in "+empty+"\n" {
		t.Errorf("empty directory: %d, %q, %q", code, stdout, stderr)
	}
}

// checkLines fails t unless code is 0 and every pattern matches a line
// of stdout.
func checkLines(t *testing.T, what string, code int, stdout, stderr string, patterns []string) {
	t.Helper()
	if code != 0 {
		t.Errorf("%s: exit %d: %s", what, code, stderr)
	}
	for _, p := range patterns {
		if !regexp.MustCompile(`(?m)` + p).MatchString(stdout) {
			t.Errorf("%s: no line matches %s in:\n%s", what, p, stdout)
		}
	}
}

func TestQuotaResetLocal(t *testing.T) {
	dir := t.TempDir()
	s := fillLocal(t, dir, "gh", "1/h", 0, 1)
	db := filepath.Join(dir, "gh.db")
	reset := func(tty bool, stdin string, args ...string) (int, string, string) {
		ios, out, errOut := testIO(stdin)
		ios.SetStdinTTY(tty)
		code := Execute(&Factory{IOStreams: ios}, append([]string{"quota", "reset", "--key", "gh", "--state", dir}, args...))
		return code, out.String(), errOut.String()
	}

	// Off a terminal without --yes: refused, exit 2.
	code, _, stderr := reset(false, "y\n")
	if code != ExitUsage || !strings.Contains(stderr, "there is no terminal to ask: pass --yes to reset it") {
		t.Errorf("no terminal, no --yes: %d, %q; want 2", code, stderr)
	}
	// While open: refused, exit 1.
	code, _, stderr = reset(false, "", "--yes")
	if code != ExitFailed || stderr != "pace: quota \"gh\" is open in another process; stop it first: quota in use\n" {
		t.Errorf("in use: %d, %q; want 1 and why", code, stderr)
	}
	s.Close()
	// On a terminal: asked; anything but y keeps it.
	code, _, stderr = reset(true, "n\n")
	if code != ExitFailed || !strings.Contains(stderr, "[y/N] ") || !strings.HasSuffix(stderr, "pace: quota \"gh\" in "+dir+" left as it was\n") {
		t.Errorf("answered n: %d, %q; want 1, the question, and nothing done", code, stderr)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("the store is gone after n: %v", err)
	}
	code, stdout, stderr := reset(true, "y\n", "--json")
	if code != 0 || stdout != `{"key":"gh","store":"local","path":"`+db+`","reset":true}`+"\n" {
		t.Errorf("answered y: %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the store is still there after the reset: %v", err)
	}
	// Gone: exit 1, nothing asked.
	code, _, stderr = reset(true, "y\n")
	if code != ExitFailed || stderr != "pace: no quota \"gh\" in "+dir+"\n" {
		t.Errorf("no quota: %d, %q", code, stderr)
	}
	// Other rules may take the name at once.
	fillLocal(t, dir, "gh", "5/s", 0, 1)
}

func TestQuotaRedis(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	srv := redistest.Start(t, "--user", "alice", "on", ">hunter2pw", "~*", "&*", "+@all")
	url := "redis://alice:hunter2pw@" + srv.Addr()
	redacted := redisrate.RedactURL(url)
	ro, err := redisrate.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewUniversalClient(ro)
	defer c.Close()
	l, err := redisrate.Open(context.Background(), c, redisrate.Options{Key: "api", Rules: []throttle.Rule{{N: 4, Window: time.Minute}}, GlobalJobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held, err := l.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := execPace(t, "", "quota", "show", "--redis", url, "--key", "api")
	checkLines(t, "quota show --redis", code, stdout, stderr, []string{
		`^quota api \(redis ` + regexp.QuoteMeta(redacted) + `\)$`,
		`^  rule 4/m +1/4 used +25%$`,
		`^  slots +1 of 3 held$`,
		`^  lease \S+ +process \S+, expires in [0-9.]+m?s unless renewed$`,
	})
	code, stdout, stderr = execPace(t, "", "quota", "show", "--redis", url, "--key", "api", "--json")
	var v quota.View
	if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil || v.Store != "redis" || v.URL != redacted ||
		v.GlobalJobs != 3 || len(v.Slots) != 1 || v.Slots[0].Expires == nil || v.Rules[0].Used != 1 {
		t.Errorf("quota show --redis --json = %d, %v, %+v (%s)", code, err, v, stderr)
	}
	code, _, stderr = execPace(t, "", "quota", "reset", "--redis", url, "--key", "api", "--yes")
	if code != ExitFailed || !strings.Contains(stderr, "quota in use") {
		t.Errorf("reset with a slot held = %d, %q; want 1, in use", code, stderr)
	}
	held.Release()
	code, _, stderr = execPace(t, "", "quota", "reset", "--redis", url, "--key", "api", "--yes")
	if code != 0 || stderr != `pace: quota "api" in redis `+redacted+" reset: the next process starts afresh, with any rules\n" {
		t.Errorf("reset = %d, %q", code, stderr)
	}
	if q, err := redisrate.Inspect(context.Background(), c, "api"); err != nil || !q.Expired || len(q.Rules) != 0 {
		t.Errorf("after reset: %+v, %v; want nothing kept", q, err)
	}
	for _, out := range []string{stdout, stderr} {
		if strings.Contains(out, "hunter2pw") {
			t.Errorf("the password shows: %q", out)
		}
	}
}

// TestQuotaShowUnknownKey: a quota the store keeps nothing of is shown
// alike by the local store and Redis: one line on stderr, nothing on
// stdout (with --json too), exit 1.
func TestQuotaShowUnknownKey(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	dir := t.TempDir()
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--state", dir}, `pace: no quota "nope" in ` + dir + "\n"},
		{[]string{"--redis", url}, `pace: no quota "nope" in redis ` + url + "\n"},
	} {
		for _, asJSON := range []bool{false, true} {
			args := append([]string{"quota", "show", "--key", "nope"}, tt.args...)
			if asJSON {
				args = append(args, "--json")
			}
			code, stdout, stderr := execPace(t, "", args...)
			if code != ExitFailed || stdout != "" || stderr != tt.want {
				t.Errorf("pace %s = exit %d, stdout %q, stderr %q; want 1, nothing, %q", strings.Join(args, " "), code, stdout, stderr, tt.want)
			}
		}
	}
}
