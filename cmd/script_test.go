//go:build unix

package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/pace-cli/pace/internal/foreground"
	"github.com/pace-cli/pace/internal/limiter"
	"github.com/pace-cli/pace/throttle"
)

// TestMain registers the programs the scripts run: pace itself, and pace
// with a limiter whose backend fails.
func TestMain(m *testing.M) {
	// The pace processes that tests start (the scripts, ptyRun, paceProcess)
	// are this race-enabled binary, which otherwise sleeps 1s at every exit.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	testscript.Main(m, map[string]func(){
		"pace": func() { exitShowing(Main()) },
		"pace-argv-probe": func() {
			// Appends its arguments, one per line, to $PROBE_OUT and
			// exits with $PROBE_EXIT: what a job really received.
			f, err := os.OpenFile(os.Getenv("PROBE_OUT"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(125)
			}
			fmt.Fprintln(f, strings.Join(os.Args[1:], "\n"))
			f.Close()
			code, _ := strconv.Atoi(os.Getenv("PROBE_EXIT"))
			os.Exit(code)
		},
		"pace-job": func() {
			// Runs pace as a shell with job control runs a job: in a
			// process group of its own, under this process, which leads a
			// session of its own. A process group whose members' parents
			// are all outside its session (pace's under testscript) is
			// orphaned, and the kernel stops none of it on SIGTSTP.
			syscall.Setsid()
			path, err := exec.LookPath("pace")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(125)
			}
			c := exec.Command(path, os.Args[1:]...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			c.Run()
			os.Exit(c.ProcessState.ExitCode())
		},
		"pace-failing-backend": func() {
			// Admits $PACE_TEST_ADMIT calls, then fails like a dead Redis.
			n, _ := strconv.Atoi(os.Getenv("PACE_TEST_ADMIT"))
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			f := NewFactory(sigs)
			f.OpenBackend = func(context.Context, limiter.Options, io.Writer) (throttle.Backend, error) {
				return newFailingBackend(n), nil
			}
			exitShowing(Execute(f, os.Args[1:]), nil)
		},
	})
}

// exitShowing exits with code, or dies of die as main does, first
// printing the code on stderr when $PACE_TEST_SHOW_EXIT is set, so that
// scripts can check exact codes.
func exitShowing(code int, die os.Signal) {
	if os.Getenv("PACE_TEST_SHOW_EXIT") != "" {
		fmt.Fprintf(os.Stderr, "[exit %d]\n", code)
	}
	foreground.Die(die)
	os.Exit(code)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Condition:           scriptCondition,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PACE_TEST_SHOW_EXIT", "1")
			// A race-enabled binary otherwise sleeps 1s at every exit.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			examples, err := filepath.Abs("../examples")
			env.Setenv("EXAMPLES", examples)
			return err
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":     cmdWaitfile,
			"waitgrep":     cmdWaitgrep,
			"waitproc":     cmdWaitproc, // script_proc_test.go
			"tmpfs":        cmdTmpfs,    // script_cmds_test.go
			"gone":         cmdGone,
			"rows":         cmdRows,
			"checkrate":    cmdCheckrate,
			"sigterm":      cmdSigterm,
			"signal":       cmdSignal,
			"stopped":      cmdStopped,      // script_cmds_test.go
			"strictserver": cmdStrictserver, // fetch_test.go
			"serverstats":  cmdServerstats,
			"judge":        cmdJudge,
			"waitstalled":  cmdWaitstalled,
			"redis":        cmdRedis, // redis_test.go
		},
	})
}

// waitfile FILE... waits (up to 20s) until every file exists.
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: waitfile file...")
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range args {
		for {
			if _, err := os.Stat(ts.MkAbs(a)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				ts.Fatalf("%s did not appear", a)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// waitgrep FILE REGEXP waits (up to 20s) until FILE holds a match of
// REGEXP: for what a background command writes to a file while it runs.
// If it never does, the last background command is killed, so that a
// hung one fails the script at once.
func cmdWaitgrep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitgrep file regexp")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(b) {
			return
		}
		if time.Now().After(deadline) {
			if bg := ts.BackgroundCmds(); len(bg) > 0 && bg[len(bg)-1].Process != nil {
				bg[len(bg)-1].Process.Kill()
			}
			b, _ := os.ReadFile(ts.MkAbs(args[0]))
			ts.Fatalf("%s never matched %q; it holds:\n%s", args[0], args[1], b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkrate RULES FILE N checks that FILE holds N instants (Unix
// nanoseconds, one a line, as date +%s%N writes them) that keep every rule
// exactly as given: the margin the run used must cover the jitter between
// admission and the stamp.
func cmdCheckrate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: checkrate rules file count")
	}
	rules, err := throttle.ParseRules(args[0])
	ts.Check(err)
	var times []time.Time
	for _, l := range strings.Fields(ts.ReadFile(args[1])) {
		ns, err := strconv.ParseInt(l, 10, 64)
		ts.Check(err)
		times = append(times, time.Unix(0, ns))
	}
	if want, _ := strconv.Atoi(args[2]); len(times) != want {
		ts.Fatalf("%d starts, want %d", len(times), want)
	}
	for _, r := range throttle.Check(rules, calls1(times...)) {
		if r.Violations > 0 {
			ts.Fatalf("rule %v broken %d times (peak %d in a window)", r.Rule, r.Violations, r.Peak)
		}
	}
}

// sigterm PIDFILE sends SIGTERM to the process whose pid is in PIDFILE.
func cmdSigterm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sigterm pidfile")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	ts.Check(syscall.Kill(pid, syscall.SIGTERM))
}

// signal SIG [PIDFILE] sends SIGSIG (HUP, QUIT, TERM, TSTP, CONT) to the process whose
// pid is in PIDFILE, or to the last background command.
func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	sigs := map[string]syscall.Signal{"HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT, "TERM": syscall.SIGTERM,
		"TSTP": syscall.SIGTSTP, "CONT": syscall.SIGCONT}
	sig, ok := syscall.Signal(0), false
	if len(args) == 1 || len(args) == 2 {
		sig, ok = sigs[args[0]]
	}
	if neg || !ok {
		ts.Fatalf("usage: signal HUP|QUIT|TERM|TSTP|CONT [pidfile]")
	}
	if len(args) == 1 { // the last background command
		bg := ts.BackgroundCmds()
		if len(bg) == 0 || bg[len(bg)-1].Process == nil {
			ts.Fatalf("signal: no background command")
		}
		ts.Check(bg[len(bg)-1].Process.Signal(sig))
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[1])))
	ts.Check(err)
	ts.Check(syscall.Kill(pid, sig))
}

// calls1 returns one call of cost 1 per instant.
func calls1(times ...time.Time) []throttle.Call {
	cs := make([]throttle.Call, len(times))
	for i, t := range times {
		cs[i] = throttle.Call{At: t, Cost: 1}
	}
	return cs
}
