package cmd

import (
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/throttle"
)

// Values of --progress and --summary.
const (
	progressAuto   = "auto"
	progressAlways = "always"
	progressNever  = "never"

	summaryText = "text"
	summaryJSON = "json"
	summaryNone = "none"
)

// defaultGrace is how long running jobs may go on after the first
// interrupt before they are killed.
const defaultGrace = 10 * time.Second

// CommonOptions are the flags that every command running jobs through the
// limiter shares (pace run, pace fetch): rules, concurrency, input,
// retries, output and reporting.
type CommonOptions struct {
	Rules     []throttle.Rule
	Jobs      int // 0: the number of CPUs
	Input     string
	Null      bool
	Margin    time.Duration
	Timeout   time.Duration
	Retries   int
	KeepOrder bool
	Tag       bool
	DryRun    bool
	Verbose   bool
	Progress  string
	Summary   string
	Grace     time.Duration
	JobLogOptions
	// Redis, when it names a Redis, shares the rules with other
	// processes (redis.go).
	Redis RedisOptions
}

// Default margins, chosen from the accuracy benchmark (docs/benchmarks.md):
// 30 calls under 5/s AND 12/3s with -j 4 against a server that enforces both
// exactly on arrival. A job started as a process (pace run, one curl each)
// reaches the server up to tens of milliseconds after its admission,
// depending on how many start at once, and 50ms was the smallest margin with
// no refusal in repeated runs (makespan 1.5% over the optimum). In-process
// HTTP (pace fetch) arrives within a few milliseconds: 10ms kept every run
// clean at 0.4% over the optimum.
const (
	defaultRunMargin   = 50 * time.Millisecond
	defaultFetchMargin = 10 * time.Millisecond
)

// addCommonFlags binds the shared flags of cmd to o and sets o's defaults;
// margin is the command's default --margin.
func addCommonFlags(cmd *cobra.Command, o *CommonOptions, margin time.Duration) {
	o.Progress, o.Summary, o.Grace = progressAuto, summaryText, defaultGrace
	fl := cmd.Flags()
	fl.VarP(rulesValue{&o.Rules}, "rate", "r",
		"rate rule `N/PERIOD`, e.g. 10/s, 500/min, 12/3s, 100/1m30s, 10000/day;\nrepeat or comma-separate to keep several at once (default: no rate limit)")
	fl.IntVarP(&o.Jobs, "jobs", "j", 0, "run at most `N` jobs at once (default: the number of CPUs)")
	fl.StringVarP(&o.Input, "input", "a", "-", "read items from `FILE` (- means stdin)")
	fl.BoolVarP(&o.Null, "null", "0", false, "items are separated by NUL bytes, not newlines (find -print0)")
	fl.DurationVar(&o.Margin, "margin", margin, "widen every rule's window by `DURATION`, so that a server counting arrivals\nstill sees the rules kept despite start-up and network jitter")
	fl.DurationVar(&o.Timeout, "timeout", 0, "kill a job's process group after `DURATION` (0: no timeout)")
	fl.IntVar(&o.Retries, "retries", 0, "run a failed job up to `N` more times; each attempt is admitted by the rules again")
	fl.BoolVarP(&o.KeepOrder, "keep-order", "k", false, "print output in input order, not completion order")
	fl.BoolVar(&o.Tag, "tag", false, "prefix each output line with the item and a tab")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print each command that would run; run nothing, consume no quota")
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "log each wait (rule, duration) and each job's start and end to stderr")
	fl.Var(enumValue{&o.Progress, []string{progressAuto, progressAlways, progressNever}}, "progress",
		"progress bar on stderr; auto: only when stderr is a terminal")
	fl.Var(enumValue{&o.Summary, []string{summaryText, summaryJSON, summaryNone}}, "summary",
		"final summary on stderr")
	fl.DurationVar(&o.Grace, "grace", defaultGrace, "after the first interrupt, let running jobs finish for up to `DURATION`, then kill them")
	addJobLogFlags(cmd, &o.JobLogOptions)
	addRedisFlags(cmd, &o.Redis)

	cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions(
		[]string{progressAuto, progressAlways, progressNever}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("summary", cobra.FixedCompletions(
		[]string{summaryText, summaryJSON, summaryNone}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("rate", cobra.NoFileCompletions)
	cmd.RegisterFlagCompletionFunc("jobs", cobra.NoFileCompletions)
}

// check validates the options that flag parsing cannot, and fills in the
// defaults that depend on the machine.
func (o *CommonOptions) check() error {
	switch {
	case o.Jobs < 0:
		return flagErrorf("invalid argument %d for \"-j, --jobs\": want at least 1, or 0 for the number of CPUs", o.Jobs)
	case o.Retries < 0:
		return flagErrorf("invalid argument %d for \"--retries\": want at least 0", o.Retries)
	case o.Timeout < 0:
		return flagErrorf("invalid argument %v for \"--timeout\": want at least 0", o.Timeout)
	case o.Margin < 0:
		return flagErrorf("invalid argument %v for \"--margin\": want at least 0", o.Margin)
	case o.Grace < 0:
		return flagErrorf("invalid argument %v for \"--grace\": want at least 0", o.Grace)
	}
	if err := o.JobLogOptions.check(); err != nil {
		return err
	}
	if err := o.Redis.check(len(o.Rules) > 0); err != nil {
		return err
	}
	if o.Jobs == 0 {
		o.Jobs = runtime.NumCPU()
	}
	return nil
}
