package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/foreground"
	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/limiter"
	"github.com/pace-cli/pace/internal/quota"
	"github.com/pace-cli/pace/internal/spec"
	"github.com/pace-cli/pace/runner/command"
	"github.com/pace-cli/pace/throttle"
)

// ExecOptions are the inputs of pace exec: one call admitted by the
// rules of a quota, then one command run in the foreground.
type ExecOptions struct {
	IO      *IOStreams
	Factory *Factory
	// Rules and CostRules are -r's and --cost-rate's; Cost is the call's
	// cost (--cost), 1 unless given.
	Rules     []throttle.Rule
	CostRules []throttle.Rule
	Cost      int
	costSet   bool
	// Margin widens every rule's window (--margin), fixed.
	Margin time.Duration
	// Shared names the quota shared with other processes: --key alone
	// (the local store), or --redis.
	Shared RedisOptions
	// WaitOnly admits the call and runs nothing (--wait-only).
	WaitOnly bool
	// Verbose says on stderr when the call was admitted.
	Verbose bool
	// Command is the command and its arguments.
	Command []string
}

const execLong = `Wait until the rules of a quota allow one more call, then run one
command in the foreground: pace run's rules for a shell loop, a Makefile
or a cron job, one call at a time. Every pace exec, pace run and pace
fetch naming the same quota keeps its rules together:

  --key NAME         share the quota with every pace on this host naming
                     it (a file in --state DIR, see "pace quota")
  --redis URL        share it through Redis, with --key NAME
  neither            this process's rules only (little use for one call)

The call costs 1, or --cost N under --cost-rate rules. With
--global-jobs N at most N commands run at once across the quota: the
slot is held until the command ends. If pace is killed, even outright
(SIGKILL), the command dies with it on Linux, and so does what the
command started (a script's background jobs, what left for a group of
its own): a reaper pace starts once the command has run for 50ms finds
them by the $PACE_JOB value pace sets in the command's environment. The
command runs
directly (no shell unless you write one), with pace's stdin, stdout and
stderr. pace sends it the signals that pace receives while it runs:
SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH, so its
traps run as under a shell, and pace exits with its status. In the
foreground of a terminal, Ctrl-C, Ctrl-\ and a resize reach the command
directly, and pace does not send them a second time.

While the call waits, pace says which rule of the quota is full and when
the next call may go: at once with -v, else on a terminal once it has
waited a second.

--wait-only admits the call and exits 0 without running anything: to
pace a step that is not a command, or to tell pace's exit status from
the command's.

Exit codes:
  N    the command's exit status, once it ran (128+S if signal S killed it)
  2    usage or rule error, or the quota is kept with other rules;
       nothing ran
  3    the quota's store failed (Redis down, a damaged store file);
       nothing ran
  126  the command cannot run (not executable, a directory)
  127  the command was not found
  130  SIGINT before the command started (143: SIGTERM, 129: SIGHUP,
       131: SIGQUIT)

SIGINT that stops pace, or kills the command, kills pace too (a shell's
status is 130 all the same), so that Ctrl-C stops a shell loop of pace
exec as it stops a loop of the command.

The command's own status passes through unchanged, so a command exiting
2, 3, 126 or 127 looks like pace's own failure. pace's failures happen
before the command starts and always print a line starting "pace:" on
stderr; where the difference matters, admit with --wait-only first and
run the command after (without a slot held while it runs).`

const execExample = `  # one GitHub API call per repository, 5000/h and 10/s across every loop on this host
  for r in $(cat repos); do pace exec --key gh -r 5000/h -r 10/s -- gh api "repos/$r"; done

  # at most 2 builds at once on this host, whoever starts them
  pace exec --key builds --global-jobs 2 -- make -C "$dir"

  # tokens per minute: a call of cost 1200 under a 90000/min budget
  pace exec --key llm --cost-rate 90000/min --cost 1200 -- ./ask.sh prompt.txt

  # shared through Redis by every host; pace only waits, the script runs after
  pace exec --redis redis://cache:6379 --key api -r 100/min --wait-only && ./call.sh`

// NewCmdExec returns the pace exec command. runF, if not nil, replaces
// the real run (tests capture the options with it).
func NewCmdExec(f *Factory, runF func(*ExecOptions) error) *cobra.Command {
	opts := &ExecOptions{IO: f.IOStreams, Factory: f, Margin: defaultRunMargin}
	cmd := &cobra.Command{
		Use:     "exec [flags] [--] <command> [<arg>...]",
		Short:   "Run one command once the rules of a quota allow it",
		Long:    execLong,
		Example: execExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			opts.costSet = cmd.Flags().Changed("cost")
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return execRun(cmd.Context(), opts)
		},
	}
	// Flags after the command are the command's.
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	fl.VarP(rulesValue{rules: &opts.Rules}, "rate", "r",
		"rate rule `N/PERIOD`, e.g. 10/s, 5000/h, 12/3s;\nrepeat or comma-separate to keep several at once")
	fl.Var(rulesValue{rules: &opts.CostRules, cost: true}, "cost-rate",
		"cost rule `N/PERIOD`: the calls' costs (--cost) add up to at most N in any window")
	fl.Var(intValue{&opts.Cost}, "cost", "the call's cost under --cost-rate: a whole number `N` (default 1)")
	fl.Var(durationValue{&opts.Margin}, "margin",
		"widen every rule's window by `DURATION`, so that a server counting arrivals\nstill sees the rules kept despite the command's start-up")
	fl.BoolVar(&opts.WaitOnly, "wait-only", false, "admit the call, then exit 0 without running anything")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "say on stderr what the call waits on and until when, then when it was admitted")
	fl.Lookup("margin").DefValue = defaultRunMargin.String()
	addRedisFlags(cmd, &opts.Shared)
	for _, name := range []string{"rate", "cost-rate", "cost", "margin"} {
		cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	return cmd
}

// check validates the options that flag parsing cannot.
func (o *ExecOptions) check() error {
	switch {
	case len(o.Command) == 0 && !o.WaitOnly:
		return flagErrorf("pace exec needs a command to run, after --, such as: pace exec --key api -r 10/s -- curl -fsS URL; or --wait-only")
	case len(o.Command) > 0 && o.WaitOnly:
		return flagErrorf("--wait-only runs nothing, but a command was given (%q): leave out one or the other", o.Command[0])
	case o.Margin < 0:
		return flagErrorf("invalid argument %v for \"--margin\": want at least 0", o.Margin)
	case o.costSet && o.Cost < 1:
		return flagErrorf("invalid argument %d for \"--cost\": want at least 1", o.Cost)
	case o.costSet && len(o.CostRules) == 0:
		return flagErrorf("--cost gives the call a cost, but no --cost-rate limits costs: add one, such as --cost-rate 90000/min")
	}
	if o.Cost == 0 {
		o.Cost = 1
	}
	rules := o.allRules()
	if m := throttle.MaxCost(rules); m > 0 && o.Cost > m {
		return flagErrorf("invalid argument %d for \"--cost\": the call could never be admitted under a cost rule of %d", o.Cost, m)
	}
	return o.Shared.check(len(rules) > 0)
}

// allRules returns -r's rules, then --cost-rate's, each once.
func (o *ExecOptions) allRules() []throttle.Rule {
	return spec.Union(o.Rules, o.CostRules)
}

// execRun admits one call and runs the command; it returns nil or an
// *ExitError with the exit code, everything reported by then.
func execRun(ctx context.Context, opts *ExecOptions) error {
	ios := opts.IO
	// Find the command before anything is spent: a typo costs no quota.
	var path string
	if !opts.WaitOnly {
		// Its output would vanish (checkStdio).
		if f := opts.Factory; f.checkStdio != nil {
			if code, ok := f.checkStdio(); !ok {
				return &ExitError{Code: code}
			}
		}
		p, code, err := foreground.Look(opts.Command[0])
		if err != nil {
			return reportf(ios, code, "%v", shownCommandError(opts.Command, err))
		}
		path = p
	}

	// Until the command starts, an interrupt stops pace: SIGHUP and
	// SIGQUIT too (else a hang-up's death, and for SIGQUIT Go's dump of
	// every goroutine and exit 2); the command is sent them once it runs.
	uncatch := sync.OnceFunc(opts.Factory.catchStopSignals())
	defer uncatch()
	admitCtx, cancel, endWatch := interrupt.Context(ctx, opts.Factory.Signals)
	defer cancel()
	var sig os.Signal

	// Its margin is fixed: a shared quota keeps one entry for every pace
	// exec of that margin, not one per process for as long as its call
	// counts. It admits at once: a Redis quota's rules are checked by that
	// admission, a round trip less.
	backend, err := opts.Factory.openBackend(admitCtx, limiter.Options{Rules: opts.allRules(), Margin: opts.Margin,
		FixedMargin: true, CheckLater: true, Verbose: opts.Verbose, Shared: opts.Shared.shared()}, ios.ErrOut)
	if err != nil {
		if sig = endWatch(); sig != nil {
			return stoppedBeforeRun(ios, sig)
		}
		return reportf(ios, backendExitCode(err, ExitUsage), "%s", userMessage(err))
	}
	defer backend.Close()
	// A quota of one process (no --key) never makes its one call wait.
	stopNote := func() {}
	if o := opts.Shared; o.URL != "" || o.Local() {
		stopNote = quota.WaitNote(admitCtx, o.URL, o.State, o.Key, ios.ErrOut, opts.Verbose, ios.IsStderrTTY())
	}
	adm, err := backend.Admit(admitCtx, opts.Cost)
	stopNote()
	sig = endWatch()
	uncatch()
	switch {
	case sig != nil:
		adm.Release() // the zero Admission, if none, holds nothing
		return stoppedBeforeRun(ios, sig)
	case errors.Is(err, throttle.ErrBadCost):
		return reportf(ios, ExitUsage, "%s", userMessage(err))
	case err != nil:
		return reportf(ios, backendExitCode(err, ExitBackend), "%s", userMessage(err))
	}
	defer adm.Release()
	if opts.Verbose {
		fmt.Fprintf(ios.ErrOut, "pace: admitted at %s after waiting %s\n", adm.At.Format(admittedFormat), roundDuration(adm.Waited))
	}
	if opts.WaitOnly {
		return nil
	}
	code, killedBy := runForeground(opts.Factory, path, opts.Command, nil, limiter.Inherited(backend, adm), opts.Factory.exits)
	if code != ExitOK {
		return &ExitError{Code: code, Signal: dieOf(killedBy)}
	}
	return nil
}

// stoppedBeforeRun reports that sig stopped pace exec before its command
// ran.
func stoppedBeforeRun(ios *IOStreams, sig os.Signal) error {
	return stoppedf(ios, sig, "%s: stopped before anything ran", interrupt.Name(sig))
}

// dieOf returns sig if pace should die of it rather than exit (see
// ExitError.Signal): SIGINT only, the one signal a shell waiting for
// pace tells from an exit status 130, and stops its script for.
func dieOf(sig os.Signal) os.Signal {
	if sig == os.Interrupt {
		return sig
	}
	return nil
}

// admittedFormat is how pace exec -v shows the admission instant: RFC
// 3339 to the microsecond, the precision of every backend's clock.
const admittedFormat = "2006-01-02T15:04:05.000000Z07:00"

// runForeground runs argv (path found) with pace's standard streams, the
// environment env (nil: pace's) and the files extra (descriptors 3 and
// up), sending it the signals pace receives
// meanwhile, and returns its exit status as a shell gives it (package
// foreground), and the signal that killed it (nil if it exited). Unless
// last, the signals caught for the command go back to their default
// action when it returns. The command is tied to pace's reaper
// (command.Tether, Linux), so that what it started dies with a pace
// killed outright, as the command itself does.
func runForeground(f *Factory, path string, argv, env []string, extra []*os.File, last bool) (int, os.Signal) {
	ios := f.IOStreams
	tether := command.NewTether(f.reaperPath, f.reaper, command.TetherDelay)
	defer tether.Close()
	return foreground.Run(foreground.Command{Path: path, Argv: argv, Env: tether.Environ(env), ExtraFiles: extra,
		Stdin: ios.In, Stdout: ios.Out, Stderr: ios.ErrOut, Signals: f.Signals, Last: last})
}
