package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/runner/fetch"
)

// parseFetch returns the options pace fetch's flags make of args.
func parseFetch(t *testing.T, args ...string) (*FetchOptions, error) {
	t.Helper()
	return parseFlags(t, NewCmdFetch, args...)
}

func TestFetchFlagsToOptions(t *testing.T) {
	o, err := parseFetch(t, "-r", "5/s,12/3s", "-j", "4", "-a", "urls", "--margin", "5ms", "--timeout", "2s",
		"--retries", "1", "-k", "-X", "PUT", "-H", "Authorization: Bearer x, y", "-H", "X-Seq: {#}",
		"-d", "@{}", "--insecure", "-o", "out", "--output-name", "{/}.json", "--ignore-server-limits",
		"--max-body", "64M", "--max-server-pause", "2m", "--redact-param", "session", "--redact-param", "sig2",
		"https://api.example.com/items/{}")
	if err != nil {
		t.Fatal(err)
	}
	c := o.Common
	if c.Jobs != 4 || c.Input != "urls" || c.Margin != 5*time.Millisecond || !c.MarginSet || c.Timeout != 2*time.Second ||
		c.Retries != 1 || !c.KeepOrder || len(c.Rules) != 2 {
		t.Errorf("common options = %s", optionsString(c))
	}
	// A comma inside a header value stays in it (-H is not a list).
	if want := []string{"Authorization: Bearer x, y", "X-Seq: {#}"}; !slices.Equal(o.Headers, want) {
		t.Errorf("Headers = %q, want %q", o.Headers, want)
	}
	if o.URL != "https://api.example.com/items/{}" || o.Method != "PUT" || o.Data != "@{}" || !o.HasData ||
		!o.Insecure || o.OutputDir != "out" || o.OutputName != "{/}.json" || !o.IgnoreServerLimits ||
		o.MaxBody != 64<<20 || o.MaxServerPause != 2*time.Minute || !slices.Equal(o.RedactParams, []string{"session", "sig2"}) {
		t.Errorf("fetch options = %+v", o)
	}
	if o, err := parseFetch(t, "--rules-from-server", "--output-dir", "d", "http://x/{}"); err != nil || !o.RulesFromServer || o.OutputDir != "d" {
		t.Errorf("--rules-from-server --output-dir d: %+v, %v", o, err)
	}
}

func TestFetchDefaults(t *testing.T) {
	o, err := parseFetch(t)
	if err != nil {
		t.Fatal(err)
	}
	if o.Common.Retries != defaultFetchRetries || o.Common.Margin != defaultFetchMargin || o.Common.MarginSet ||
		o.Method != "" || o.HasData || o.URL != "" || o.OutputName != "{#}" || o.OutputDir != "" || o.Insecure ||
		o.IgnoreServerLimits || o.RulesFromServer || o.Common.Input != "-" ||
		o.MaxBody != fetch.DefaultMaxBody || o.MaxServerPause != fetch.DefaultMaxServerPause || o.RedactParams != nil {
		t.Errorf("defaults = %+v", o)
	}
	// -d '' is data (an empty body), not its absence.
	if o, _ := parseFetch(t, "-d", ""); o == nil || !o.HasData {
		t.Errorf("-d '': HasData = false, want true")
	}
}

func TestFetchUsageErrors(t *testing.T) {
	one := filepath.Join(t.TempDir(), "one")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-H", "no colon", "http://127.0.0.1:1/{}"}, `pace: bad header "no colon": want "Name: value"` + "\nRun 'pace fetch --help' for usage.\n"},
		{[]string{"-X", "BAD METHOD", "http://127.0.0.1:1/{}"}, `pace: bad method "BAD METHOD": want a word such as GET, POST or PUT` + "\n"},
		{[]string{"http://127.0.0.1:1/"}, `pace: URL template "http://127.0.0.1:1/" has no placeholder such as {}: every item would fetch the same thing (give no template to read one URL per item)` + "\n"},
		{[]string{"ftp://x/{}"}, `pace: URL template "ftp://x/{}": scheme "ftp": want http or https` + "\n"},
		{[]string{"-d", "@/nonexistent/pace", "http://127.0.0.1:1/{}"}, "pace: data file: stat /nonexistent/pace: no such file or directory\n"},
		{[]string{"-a", "/nonexistent/pace", "http://127.0.0.1:1/{}"}, "pace: open input: open /nonexistent/pace: no such file or directory\n"},
		{[]string{"-o", "/dev/null/x/", "http://127.0.0.1:1/{}"}, "pace: output directory: mkdir /dev/null: not a directory\n"},
		{[]string{"--rules-from-server", "--ignore-server-limits", "http://127.0.0.1:1/{}"},
			"pace: --rules-from-server and --ignore-server-limits contradict each other: use one\n"},
		{[]string{"-o", one, "http://127.0.0.1:1/{}"}, "pace: -o " + one + " names one file, but stdin holds more than one item: give a directory (-o " + strings.TrimSuffix(one, filepath.Ext(one)) + "/) for one file per item, named by --output-name, or -o /dev/null to discard the bodies\n"},
	} {
		code, stdout, stderr := execPace(t, "1\n2\n", append([]string{"fetch"}, tt.args...)...)
		if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("pace fetch %q = exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

func TestFetchOutputTarget(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "null")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		output, name      string
		dir, file, stream string
	}{
		{"", "{#}", "", "", ""},
		{"out/", "{#}", "out/", "", ""},
		{dir, "{#}", dir, "", ""}, // an existing directory
		{filepath.Join(dir, "page.html"), "{#}", "", filepath.Join(dir, "page.html"), ""},
		{"out", "{/}.html", "out", "", ""}, // --output-name says it is a directory
		{os.DevNull, "{#}", "", "", os.DevNull},
		{link, "{#}", "", "", link},
		{fifo, "{#}", "", "", fifo},
	} {
		opts := &FetchOptions{OutputDir: tt.output, OutputName: tt.name}
		d, f, s := opts.outputTarget()
		if d != tt.dir || f != tt.file || s != tt.stream {
			t.Errorf("-o %q --output-name %q: outputTarget = %q, %q, %q; want dir %q, file %q, stream %q", tt.output, tt.name, d, f, s, tt.dir, tt.file, tt.stream)
		}
	}
}

// unreadable is a stdin that fails the test if read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("stdin was read")
	return 0, io.EOF
}

func TestFetchOneFileInput(t *testing.T) {
	// -o FILE with a URL without placeholders: that URL is the one item,
	// and stdin is not read.
	opts := &FetchOptions{URL: "http://h/page", OutputDir: "page.html", Common: CommonOptions{Input: "-"}}
	in, err := opts.openInput(unreadable{t}, true, items.ReadOptions{})
	if err != nil || readAll(t, in.R) != "{}\n" || in.Name != "the URL" {
		t.Errorf("openInput(one file, a URL) = %+v, %v; want the URL as the one item", in, err)
	}
	// A template: the input must hold one item, checked before anything
	// is sent.
	opts.URL = "http://h/{}"
	for _, tt := range []struct {
		stdin string
		null  bool
		want  string
		err   string
	}{
		{stdin: "a\n", want: "a\n"},
		{stdin: "\na\n\n", want: "a\n"},
		{stdin: "a\x00", null: true, want: "a\x00"},
		{stdin: "a\nb\n", err: "-o page.html names one file, but stdin holds more than one item: give a directory (-o page/) for one file per item, named by --output-name, or -o /dev/null to discard the bodies"},
	} {
		in, err := opts.openInput(strings.NewReader(tt.stdin), true, items.ReadOptions{NUL: tt.null})
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("openInput(%q) = %v, want %q", tt.stdin, err, tt.err)
			}
		case err != nil:
			t.Errorf("openInput(%q) = %v", tt.stdin, err)
		default:
			if b, _ := io.ReadAll(in.R); string(b) != tt.want {
				t.Errorf("openInput(%q) items %q, want %q", tt.stdin, b, tt.want)
			}
		}
	}
}

// itemServer answers /items/N with "item N (User-Agent)", later items
// first, and /missing with 404, echoing the Authorization header.
func itemServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, "no such thing; you sent %s", r.Header.Get("Authorization"))
			return
		}
		if strings.HasPrefix(r.URL.Path, "/big/") {
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/big/"))
			w.Write([]byte(strings.Repeat("x", n)))
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/items/"))
		time.Sleep(time.Duration(5-n) * 5 * time.Millisecond)
		fmt.Fprintf(w, "item %d (%s)\n", n, r.Header.Get("User-Agent"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchOutputInOrderAndSummary(t *testing.T) {
	t.Parallel()
	srv := itemServer(t)
	code, stdout, stderr := execPace(t, "1\n2\n3\n4\n", "fetch", "-j", "4", "-k", "--progress", "never", srv.URL+"/items/{}")
	if code != ExitOK {
		t.Fatalf("pace fetch = exit %d\n%s", code, stderr)
	}
	ua := "pace/" + fullVersion()
	if want := fmt.Sprintf("item 1 (%s)\nitem 2 (%s)\nitem 3 (%s)\nitem 4 (%s)\n", ua, ua, ua, ua); stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if !strings.HasPrefix(stderr, "pace: 4 ok, 0 failed") || !strings.Contains(stderr, fmt.Sprintf("\n  responses  200 ×4; %d B kept\n", len(stdout))) {
		t.Errorf("stderr = %q, want a summary with 4 ok and 200 ×4", stderr)
	}
}

// TestFetchFailuresRedactedAndCounted: a bad URL line fails alone, a 404
// fails its item, the exit code is 1, the JSON summary counts statuses,
// and no credential shows anywhere, even with -v and --tag.
func TestFetchFailuresRedactedAndCounted(t *testing.T) {
	t.Parallel()
	srv := itemServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	input := strings.Join([]string{
		"http://ann:pw-secret-1@" + host + "/items/1?api_key=key-secret-2&session=sess-secret-5",
		"http://ann:pw-secret-1@" + host + "/missing",
		"ann:pw-secret-1@" + host + "/no-scheme",
		"ftp://ann:pw-secret-1@" + host + "/x",
	}, "\n")
	code, stdout, stderr := execPace(t, input, "fetch", "-j", "1", "-k", "-v", "--tag", "--summary", "json", "--progress", "never",
		"--redact-param", "session", "-H", "Authorization: Bearer tok-secret-3", "-H", "X-Api-Key: key-secret-4")
	if code != ExitFailed {
		t.Fatalf("pace fetch = exit %d, want %d\n%s", code, ExitFailed, stderr)
	}
	// A URL's user name may show; its password never does.
	for _, secret := range []string{"pw-secret-1", "key-secret-2", "tok-secret-3", "key-secret-4", "sess-secret-5"} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("output shows %q:\n%s%s", secret, stdout, stderr)
		}
	}
	if !strings.HasPrefix(stdout, "http://ann:REDACTED@"+host+"/items/1?api_key=REDACTED&session=REDACTED\titem 1 ") {
		t.Errorf("stdout = %q, want the body tagged with the redacted URL", stdout)
	}
	for _, want := range []string{
		"pace: job 2: GET http://ann:REDACTED@" + host + "/missing: HTTP 404 Not Found\n",
		`pace: job 3: bad URL "ann:REDACTED@` + host + `/no-scheme": no scheme`,
		`pace: job 4: bad URL "ftp://ann:REDACTED@` + host + `/x": unsupported scheme "ftp"`,
		// -v shows the error body, redacted, as a whole line.
		"http://ann:REDACTED@" + host + "/missing\tno such thing; you sent REDACTED\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	var sum struct {
		OK, Failed int64
		HTTP       struct{ Status map[string]int64 }
	}
	if err := json.Unmarshal([]byte(lastLine(stderr)), &sum); err != nil {
		t.Fatalf("last stderr line is not JSON: %v", err)
	}
	if sum.OK != 1 || sum.Failed != 3 || sum.HTTP.Status["200"] != 1 || sum.HTTP.Status["404"] != 1 || len(sum.HTTP.Status) != 2 {
		t.Errorf("summary = %+v, want 1 ok, 3 failed, one 200 and one 404", sum)
	}
}

// TestFetchServerPauseBindsTheRun: a 429 with Retry-After: 1 pauses
// admissions for a second, the item is retried, and the summary names
// the server as what bound the run.
func TestFetchServerPauseBindsTheRun(t *testing.T) {
	t.Parallel()
	ss, err := strictserver.New(strictserver.Options{RefuseFirst: 1, RetryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ss)
	defer srv.Close()
	start := time.Now()
	// --ignore-server-limits: the pause only, no rule learned from it.
	code, _, stderr := execPace(t, "1\n2\n3\n", "fetch", "-j", "1", "-r", "100/s", "--retries", "1", "--ignore-server-limits",
		"--summary", "json", "--progress", "never", srv.URL+"/{}")
	if code != ExitOK {
		t.Fatalf("pace fetch = exit %d\n%s", code, stderr)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("run took %v, want at least the 1s the server asked for", d)
	}
	var sum struct {
		OK      int64
		Binding struct{ Kind string }
		HTTP    struct {
			Status       map[string]int64
			ServerPauses int64   `json:"server_pauses"`
			Paused       float64 `json:"paused_seconds"`
			PauseReason  string  `json:"pause_reason"`
		}
	}
	if err := json.Unmarshal([]byte(lastLine(stderr)), &sum); err != nil {
		t.Fatalf("last stderr line is not JSON: %v\n%s", err, stderr)
	}
	if sum.OK != 3 || sum.Binding.Kind != "server" || sum.HTTP.Status["429"] != 1 || sum.HTTP.ServerPauses != 1 ||
		sum.HTTP.Paused < 0.5 || !strings.Contains(sum.HTTP.PauseReason, "429") {
		t.Errorf("summary = %+v, want 3 ok, one 429, one pause binding the run", sum)
	}
}

func TestFetchLimits(t *testing.T) {
	t.Parallel()
	srv := itemServer(t)
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer refuse.Close()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-body", "10", srv.URL + "/big/{}"}, "pace: job 1: GET " + srv.URL + "/big/100: "},
		{[]string{"--max-server-pause", "2s", refuse.URL + "/{}"}, "pace: job 1: GET " + refuse.URL + "/100: "},
	} {
		start := time.Now()
		code, stdout, stderr := execPace(t, "100\n", append([]string{"fetch", "--summary", "none", "--progress", "never"}, tt.args...)...)
		if code != ExitFailed || stdout != "" || !strings.Contains(stderr, "\n"+tt.want) && !strings.HasPrefix(stderr, tt.want) || time.Since(start) > 10*time.Second {
			t.Errorf("pace fetch %q = exit %d after %v, stdout %q, stderr %q; want exit 1 at once and %q", tt.args, code, time.Since(start), stdout, stderr, tt.want)
		}
	}
}

// A rule the server publishes that would hold the next call past
// --max-server-pause stops the run at once, exit 1, saying which rule:
// a lying RateLimit-Policy cannot stall a run for a month.
func TestFetchPublishedRuleTooSlow(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", "1;w=2592000")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	start := time.Now()
	code, stdout, stderr := execPace(t, "1\n2\n3\n", "fetch", "--summary", "none", "--progress", "never", "-j", "1",
		"--rules-from-server", "--max-server-pause", "10s", srv.URL+"/{}")
	want := "pace: the server publishes 1/30d (RateLimit-Policy): the next call would wait 720h0m, longer than --max-server-pause 10s"
	if code != ExitFailed || stdout != "ok" || !strings.HasPrefix(stderr, want) || time.Since(start) > 10*time.Second {
		t.Errorf("exit %d after %v, stdout %q, stderr %q; want exit 1 at once, one body, and %q", code, time.Since(start), stdout, stderr, want)
	}
}

func TestFetchOutputFiles(t *testing.T) {
	t.Parallel()
	srv := itemServer(t)
	dir := t.TempDir()
	// -o FILE and a URL: one item, stdin not read.
	file := filepath.Join(dir, "page.txt")
	ios, out, errOut := testIO("")
	ios.In = unreadable{t}
	if code := Execute(&Factory{IOStreams: ios}, []string{"fetch", "--summary", "none", "--progress", "never", "-o", file, srv.URL + "/big/5"}); code != ExitOK {
		t.Fatalf("pace fetch -o FILE URL = exit %d\n%s", code, errOut)
	}
	if b, err := os.ReadFile(file); string(b) != "xxxxx" || out.String() != "" {
		t.Errorf("-o FILE: file %q (%v), stdout %q; want the body in the file only", b, err, out)
	}
	// -o DIR/: one file per item, named by --output-name.
	outDir := filepath.Join(dir, "pages") + "/"
	code, stdout, stderr := execPace(t, "1\n2\n", "fetch", "--summary", "none", "--progress", "never", "-o", outDir, "--output-name", "{#}.txt", srv.URL+"/big/{}")
	if code != ExitOK || stdout != "" {
		t.Fatalf("pace fetch -o DIR/ = exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	for name, want := range map[string]string{"1.txt": "x", "2.txt": "xx"} {
		if b, err := os.ReadFile(filepath.Join(outDir, name)); string(b) != want {
			t.Errorf("%s = %q (%v), want %q", name, b, err, want)
		}
	}
}

func TestFetchDryRun(t *testing.T) {
	outDir := filepath.Join(t.TempDir(), "never-made") + "/"
	code, stdout, stderr := execPace(t, "1\n2\n", "fetch", "--dry-run", "-o", outDir, "https://u:pw-777@api.example.com/items/{}?token=t-888")
	want := "GET 'https://u:REDACTED@api.example.com/items/1?token=REDACTED'\nGET 'https://u:REDACTED@api.example.com/items/2?token=REDACTED'\n"
	if code != ExitOK || stdout != want {
		t.Errorf("pace fetch --dry-run = exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
	if _, err := os.Stat(outDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run made the output directory (%v)", err)
	}
}
