package cmd

import (
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/costexpr"
	"github.com/pace-cli/pace/internal/halt"
	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/metrics"
	"github.com/pace-cli/pace/internal/spec"
	"github.com/pace-cli/pace/throttle"
)

// Values of --progress and --summary.
const (
	progressAuto   = "auto"
	progressAlways = "always"
	progressLines  = "lines"
	progressNever  = "never"

	summaryText = "text"
	summaryJSON = "json"
	summaryNone = "none"
)

// progressModes are the values of --progress.
var progressModes = []string{progressAuto, progressAlways, progressLines, progressNever}

// bareProgress makes --progress with no value mean --progress=always: a
// --progress followed by "--", another flag or nothing no longer takes
// that as its value (pace run --progress -- echo {}). Only the arguments
// before the first "--" are looked at.
func bareProgress(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if a == "--progress" && (i+1 == len(out) || strings.HasPrefix(out[i+1], "-")) {
			out[i] = "--progress=" + progressAlways
		}
	}
	return out
}

// defaultGrace is how long running jobs may go on after the first
// interrupt before they are killed.
const defaultGrace = 10 * time.Second

// maxJobs is the largest -j pace accepts: more would be a typo, and the
// pool's bookkeeping grows with the jobs in flight.
const maxJobs = 100_000

// CommonOptions are the flags that every command running jobs through the
// limiter shares (pace run, pace fetch): rules, concurrency, input,
// retries, output and reporting.
type CommonOptions struct {
	Rules []throttle.Rule
	// CostRules limit the sum of the calls' costs (--cost-rate); Cost
	// gives each item its cost (--cost).
	CostRules []throttle.Rule
	Cost      *costexpr.Expr
	// Reorder lets cheap calls overtake a costly one waiting for room
	// (--allow-reorder).
	Reorder bool
	Jobs    int // 0: the number of CPUs
	Input   string
	Null    bool
	// ColSep splits each input line into columns {1}, {2}, ...
	ColSep    string
	colSepSet bool // --colsep was given, perhaps empty
	Margin    time.Duration
	MarginSet bool // --margin was given: fixed, not adapted
	// marginLeast is the least the adaptive margin may narrow to (see
	// throttle/margin): what the command can bound no better.
	marginLeast time.Duration
	Timeout     time.Duration
	Retries     int
	KeepOrder   bool
	Tag         bool
	DryRun      bool
	Verbose     bool
	// Quiet (-q) draws no progress unless --progress asks for it, and
	// prints no summary unless something failed.
	Quiet    bool
	Progress string
	// ProgressInterval is the time between status lines.
	ProgressInterval time.Duration
	Summary          string
	// SummaryFile, if set, receives the JSON summary whatever Summary says.
	SummaryFile string
	// MetricsAddr, if set, is where Prometheus metrics are served while
	// the run goes (metrics.go).
	MetricsAddr string
	Grace       time.Duration
	// Halt, if set, stops the run early (--halt).
	Halt *halt.Policy
	JobLogOptions
	// Redis, when it names a Redis, shares the rules with other
	// processes (redis.go).
	Redis RedisOptions
}

// allRules returns every rule of the run: -r's, then --cost-rate's, each
// once (-r cost:5/s and --cost-rate 5/s are one rule).
func (o *CommonOptions) allRules() []throttle.Rule {
	return spec.Union(o.Rules, o.CostRules)
}

// Default margins: the floor of the adaptive margin (see docs/design.md),
// chosen from the accuracy benchmark (docs/benchmarks.md): 30 calls under
// 5/s AND 12/3s with -j 4 against a server that enforces both exactly on
// arrival. A job started as a process (pace run, one curl each) reaches
// the server up to tens of milliseconds after its admission, depending on
// how many start at once, and 50ms was the smallest margin with no
// refusal in repeated runs on a quiet machine; a job that ends sooner
// proves its call arrived sooner, down to 10ms plus the spread pace sees.
// In-process HTTP (pace fetch) arrives within a few milliseconds: 10ms.
const (
	defaultRunMargin   = 50 * time.Millisecond
	leastRunMargin     = 10 * time.Millisecond
	defaultFetchMargin = 10 * time.Millisecond
)

// addCommonFlags binds the shared flags of cmd to o and sets o's defaults;
// margin is the command's default --margin, and least the least its
// adaptive margin may narrow to.
func addCommonFlags(cmd *cobra.Command, o *CommonOptions, margin, least time.Duration) {
	o.Grace, o.Margin, o.marginLeast = defaultGrace, margin, least
	fl := cmd.Flags()
	fl.VarP(rulesValue{rules: &o.Rules}, "rate", "r",
		"rate rule `N/PERIOD`, e.g. 10/s, 500/min, 12/3s, 100/1m30s, 10000/day;\nrepeat or comma-separate to keep several at once (default: no rate limit)")
	fl.Var(rulesValue{rules: &o.CostRules, cost: true}, "cost-rate",
		"cost rule `N/PERIOD`: the calls' costs (--cost) add up to at most N in any window,\nsuch as 90000/min for tokens per minute; repeat or comma-separate")
	fl.Var(costValue{&o.Cost}, "cost", "each item's cost under --cost-rate: `EXPR` such as 1000, {2} (a column),\n{len}/4 (the item's bytes / 4) or, for fetch, {body-len}/4 (default 1)")
	fl.BoolVar(&o.Reorder, "allow-reorder", false, "let a call that fits now overtake a costlier one waiting for room\n(throughput before order; in-memory limiter only: refused with --key or --redis)")
	fl.VarP(intValue{&o.Jobs}, "jobs", "j", "run at most `N` jobs at once (default: the number of CPUs)")
	o.Input = "-"
	fl.VarP(oncePathValue{pathValue{&o.Input, "want a file name, or - for stdin"},
		"pace reads one -a (for every combination of several files, as GNU parallel's -a A -a B, use :::: A B)", new(bool)},
		"input", "a", "read items from `FILE` (- means stdin)")
	fl.BoolVarP(&o.Null, "null", "0", false, "items are separated by NUL bytes, not newlines (find -print0)")
	fl.Var(setStringValue{&o.ColSep, &o.colSepSet}, "colsep", "split each item into columns {1} {2} ... at every match of `REGEX`")
	fl.Var(setDurationValue{&o.Margin, &o.MarginSet}, "margin",
		"widen every rule's window by `DURATION`, fixed, so that a server counting arrivals\nstill sees the rules kept despite start-up and network jitter\n(default: adapts to the lags pace measures: at least "+least.String()+", wider while\ncalls leave late; the summary shows it)")
	fl.Var(durationValue{&o.Timeout}, "timeout", "kill a job's process group after `DURATION` (0: no timeout)")
	fl.Var(intValue{&o.Retries}, "retries", "run a failed job up to `N` more times; each attempt is admitted by the rules again")
	fl.BoolVarP(&o.KeepOrder, "keep-order", "k", false, "print output in input order, not completion order")
	fl.BoolVar(&o.Tag, "tag", false, "prefix each output line with the item and a tab")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print each command that would run (credentials redacted); run nothing, consume no quota")
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "log each wait (rule, duration) and each job's start and end to stderr")
	addReportFlags(cmd, o)
	fl.Var(durationValue{&o.Grace}, "grace", "after the first interrupt, let running jobs finish for up to `DURATION`, then kill them")
	fl.Var(haltValue{&o.Halt}, "halt", "stop early, as GNU parallel's --halt: `WHEN,COND=N`, such as now,fail=1 (kill the\nrunning jobs at the first failure), soon,fail=3 (start no more after 3), now,fail=10%,\nnow,success=1; the exit code is the halting job's, never 0 with an item failed but for success=")
	fl.Lookup("margin").DefValue = "" // adaptive: the usage says how
	fl.Lookup("grace").DefValue = defaultGrace.String()
	addJobLogFlags(cmd, &o.JobLogOptions)
	addRedisFlags(cmd, &o.Redis)
	cmd.RegisterFlagCompletionFunc("rate", cobra.NoFileCompletions)
	cmd.RegisterFlagCompletionFunc("jobs", cobra.NoFileCompletions)
}

// addReportFlags binds the flags that say how a run reports (progress,
// summary, metrics) to o, with their defaults: pace run's, fetch's and
// proxy's.
func addReportFlags(cmd *cobra.Command, o *CommonOptions) {
	o.Progress, o.Summary, o.ProgressInterval = progressAuto, summaryText, defaultProgressInterval
	fl := cmd.Flags()
	fl.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress, and no summary unless something failed")
	fl.Var(enumValue{&o.Progress, progressModes}, "progress",
		"progress on stderr: a bar (always), status lines (lines), none (never);\nauto: a bar on a terminal (TERM not dumb) unless stdout is a pipe, status lines otherwise; --progress alone: always")
	fl.Var(durationValue{&o.ProgressInterval}, "progress-interval", "print a status line every `DURATION` (--progress lines), at least 1s")
	fl.Var(enumValue{&o.Summary, []string{summaryText, summaryJSON, summaryNone}}, "summary",
		"final summary on stderr")
	fl.Var(pathValue{&o.SummaryFile, "want a file name; leave --summary-file out for none"}, "summary-file", "also write the summary as JSON to `FILE` (see docs/summary.md)")
	fl.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on http://`HOST:PORT`/metrics while the run goes,\nsuch as 127.0.0.1:9090 (see docs/metrics.md)")
	fl.Lookup("progress-interval").DefValue = defaultProgressInterval.String()
	cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions(progressModes, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("summary", cobra.FixedCompletions(
		[]string{summaryText, summaryJSON, summaryNone}, cobra.ShellCompDirectiveNoFileComp))
}

// checkReport validates the flags of addReportFlags.
func (o *CommonOptions) checkReport() error {
	if o.ProgressInterval < minProgressInterval {
		return flagErrorf("invalid argument %v for \"--progress-interval\": want at least %v", o.ProgressInterval, minProgressInterval)
	}
	if o.MetricsAddr != "" {
		if err := metrics.CheckAddr(o.MetricsAddr); err != nil {
			return flagErrorf("invalid argument %q for \"--metrics-addr\": %v", o.MetricsAddr, err)
		}
	}
	return nil
}

// check validates the options that flag parsing cannot, and fills in the
// defaults that depend on the machine.
func (o *CommonOptions) check() error {
	switch {
	case o.Jobs < 0:
		return flagErrorf("invalid argument %d for \"-j, --jobs\": want at least 1, or 0 for the number of CPUs", o.Jobs)
	case o.Jobs > maxJobs:
		return flagErrorf("invalid argument %d for \"-j, --jobs\": want at most %d", o.Jobs, maxJobs)
	case o.Retries < 0:
		return flagErrorf("invalid argument %d for \"--retries\": want at least 0", o.Retries)
	case o.Timeout < 0:
		return flagErrorf("invalid argument %v for \"--timeout\": want at least 0", o.Timeout)
	case o.Margin < 0:
		return flagErrorf("invalid argument %v for \"--margin\": want at least 0", o.Margin)
	case o.Grace < 0:
		return flagErrorf("invalid argument %v for \"--grace\": want at least 0", o.Grace)
	}
	if o.Cost != nil && len(o.CostRules) == 0 {
		return flagErrorf("--cost gives items a cost, but no --cost-rate limits costs: add one, such as --cost-rate 90000/min")
	}
	if err := o.checkReport(); err != nil {
		return err
	}
	if err := o.JobLogOptions.check(); err != nil {
		return err
	}
	if err := o.Redis.check(len(o.allRules()) > 0); err != nil {
		return err
	}
	if o.Reorder && (o.Redis.URL != "" || o.Redis.keySet) {
		// The shared backends admit in arrival order; reordering is the
		// in-memory limiter's (throttle.WithReorder).
		from := "--key"
		switch {
		case o.Redis.urlSet:
			from = "--redis"
		case o.Redis.URL != "":
			from = "$" + redisURLEnv
		}
		return flagErrorf("--allow-reorder works with the in-memory limiter only: a shared quota (%s) admits calls in the order they come; leave out one or the other", from)
	}
	if o.Jobs == 0 {
		o.Jobs = runtime.NumCPU()
	}
	return nil
}

// checkColumns refuses a template that names a column no item can have:
// what names the template (such as `--cost "{2}"`) and its highest
// column; columns is how many each item has (0: any number, --colsep).
func checkColumns(what string, maxColumn, columns int, product bool) error {
	switch {
	case columns == 0 || maxColumn <= columns:
		return nil
	case product:
		return flagErrorf("%s uses column {%d}, but the items have %d column%s, one per ::: source",
			what, maxColumn, columns, map[bool]string{true: "s"}[columns != 1])
	}
	return flagErrorf("%s uses column {%d}, but each item is one column: split the lines into columns with --colsep, such as --colsep '\\t'",
		what, maxColumn)
}

// readOptions returns how items are read: separated by newlines or NULs,
// split into columns with --colsep.
func (o *CommonOptions) readOptions() (items.ReadOptions, error) {
	ro := items.ReadOptions{NUL: o.Null}
	if o.ColSep != "" || o.colSepSet {
		re, err := items.CompileColSep(o.ColSep)
		if err != nil {
			return ro, flagErrorf("invalid argument %q for \"--colsep\": %v", o.ColSep, err)
		}
		ro.ColSep = re
	}
	return ro, nil
}
