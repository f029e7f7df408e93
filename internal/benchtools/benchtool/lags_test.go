package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const header = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand (pace rules: 2/s)\n"
	// Under 2/s: /a and /b admitted more than a second before /c, which
	// process 2 admitted on time, but they arrived 300 and 150 ms after
	// their admissions and /c 10 ms after its own, so /c found both in
	// its window.
	log1 := write("p1.joblog", header+
		"1\t:\t1000.000000\t     0.400\t0\t6\t0\t0\tGET http://127.0.0.1:1/a\n"+
		"2\t:\t1000.050000\t     0.100\t0\t6\t0\t0\tGET http://127.0.0.1:1/b\n")
	log2 := write("p2.joblog", header+
		"1\t:\t1001.100000\t     0.020\t0\t0\t429\t0\tGET http://127.0.0.1:1/c\n")
	reqs := write("requests", "1000200000000 accepted /b\n1000300000000 accepted /a\n1001110000000 refused /c\n")
	var out strings.Builder
	if err := run([]string{"lags", "-requests", reqs, "-rules", "2/s,1/s", log1, log2}, &out); err != nil {
		t.Fatal(err)
	}
	want := "lags 3 10.0 150.0 300.0\n" +
		"slack 1/s -900.0\n" + // /b and /a arrived 100 ms apart (2/s: too few arrivals to say)
		"refused /c arrived 1001110000000 admitted 1001100000000 lag 10.0 ms (" + log2 + ")\n" +
		"  2/s: 2 accepted in the window; 2 back, /b arrived 1000200000000 admitted 1000050000000 lag 150.0 ms (" + log1 + "); admitted 1050.0 ms apart\n" +
		"  1/s: 2 accepted in the window; 1 back, /a arrived 1000300000000 admitted 1000000000000 lag 300.0 ms (" + log1 + "); admitted 1100.0 ms apart\n"
	if out.String() != want {
		t.Errorf("lags printed\n%s\nwant\n%s", out.String(), want)
	}
	for _, args := range [][]string{
		{"lags", log1},                                     // no -requests
		{"lags", "-requests", reqs},                        // no job log
		{"lags", "-requests", log1, log2},                  // not a requests file
		{"lags", "-requests", reqs, reqs},                  // not a job log
		{"lags", "-requests", reqs, "-rules", "2/x", log1}, // a bad rule
	} {
		if err := run(args, &strings.Builder{}); err == nil {
			t.Errorf("run(%q) = nil error, want one", args)
		}
	}
}
