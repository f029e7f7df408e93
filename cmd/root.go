package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pace-cli/pace/internal/osfiles"
	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/internal/spec"
	"github.com/pace-cli/pace/runner/command"
)

const rootLong = `pace runs jobs (pace run) while keeping several rate rules at once, such
as 10/s AND 500/min AND 10000/day, plus a cap on jobs in flight.

"pace [flags] -- COMMAND..." is short for "pace run [flags] -- COMMAND...",
with every flag of pace run. See "pace run --help" for those flags, rules,
placeholders and interrupts, "pace fetch --help" for URLs, and
"pace audit --help" to check a job log against rules.

` + exitCodesHelp

const rootExample = `  pace -r 5/s,12/3s -j 4 -a examples/items.txt -- echo {}
  seq 100 | pace run -r 10/s --summary json -- sh -c 'echo job {}'`

// NewCmdRoot returns the pace command with its subcommands.
func NewCmdRoot(f *Factory) *cobra.Command {
	opts := &RunOptions{IO: f.IOStreams, Factory: f}
	root := &cobra.Command{
		Use:           "pace [flags] [-- <command> [<arg>...]]",
		Short:         "Run jobs under several rate limits at once",
		Long:          rootLong,
		Example:       rootExample,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || cmd.ArgsLenAtDash() == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			} else {
				msg += "; to run a command per item: pace run -- " + strings.Join(args, " ")
			}
			return flagErrorf("%s", msg)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && cmd.Flags().NFlag() == 0 && f.IOStreams.IsStdinTTY() {
				return cmd.Help()
			}
			if err := opts.setArgs(args, cmd.ArgsLenAtDash()); err != nil {
				return err
			}
			return runRun(cmd.Context(), opts)
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.Version = fullVersion()
	root.SetVersionTemplate("pace version {{.Version}}\n")
	root.Flags().SetInterspersed(false)
	addRunFlags(root, opts)
	// pace's own help does not repeat pace run's forty flags: they are
	// there for the shorthand, and pace run --help shows them.
	root.Flags().VisitAll(func(f *pflag.Flag) { f.Hidden = true })
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err: err} })
	root.AddCommand(NewCmdRun(f, nil), NewCmdFetch(f, nil), NewCmdAudit(f, nil), NewCmdPlot(f, nil), newCmdVersion(f), newCmdGenDocs(f))
	root.AddCommand(NewCmdExec(f, nil), NewCmdQuota(f, nil), NewCmdProxy(f, nil), newCmdReaper(f))
	root.SetOut(&osfiles.KeptErr{W: f.IOStreams.Out}) // before the completion commands: cobra makes them with the writer of the day
	root.InitDefaultCompletionCmd()
	return root
}

// newCmdRootFor returns the pace command that runs args: NewCmdRoot, or,
// when args run pace exec, a root with that one subcommand and nothing
// else. pace exec starts once per call in shell loops, and making the
// other commands and their flags (pace run's forty on the root too) cost
// it about 3 ms of CPU and 75 page faults, a sixth of its start-up
// (perf stat on a 2-CPU VM). What pace exec does, prints and exits with is
// the same either way (TestExecRootSame). So for pace reaper, which each
// pace exec starts too (command.Tether), and which nobody runs by hand.
func newCmdRootFor(f *Factory, args []string) *cobra.Command {
	if len(args) == 0 || args[0] != "exec" && (args[0] != "reaper" || len(args) != 1) {
		return NewCmdRoot(f)
	}
	root := &cobra.Command{Use: "pace", SilenceErrors: true, SilenceUsage: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err: err} })
	if args[0] == "reaper" {
		root.AddCommand(newCmdReaper(f))
	} else {
		root.AddCommand(NewCmdExec(f, nil))
	}
	return root
}

// Main runs pace with the process's arguments, streams and signals, and
// returns the exit code, and the signal that pace should die of instead
// where it can (ExitError.Signal; nil for none): main passes it to
// foreground.Die before it exits with the code.
func Main() (code int, die os.Signal) {
	// pace exec --wait-only writes nothing on stdout: pace exec checks
	// it once its flags are read.
	isExec := len(os.Args) > 1 && os.Args[1] == "exec"
	if !isExec {
		if code, ok := checkStdio(); !ok {
			return code, nil
		}
	}
	osfiles.RaiseLimit()
	// SIGINT ignored from the start (a script's command run with &) is
	// ignored again once the Notify below is reset: pace could not die of
	// it, and exits with the code.
	intIgnored := signal.Ignored(os.Interrupt)
	// The signals caught here stay caught until the process exits: each
	// signal.Stop is a round trip to the runtime's signal thread (0.07 to
	// 0.1 ms of a pace exec on a 2-CPU VM), for nothing once Execute has
	// returned.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// Handling SIGPIPE (and dropping it) makes a write to a closed stdout
	// fail with EPIPE instead of killing pace, so pace can kill its jobs
	// first (see output). Children still start with the default action.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	f := NewFactory(sigs)
	f.exits = true
	f.reaperPath, f.reaper = command.Self("reaper") // newCmdReaper
	if isExec {
		f.checkStdio = checkStdio
	}
	// A hangup (the terminal closed) and Ctrl-\ stop a run as the other
	// signals do, so that its jobs, each in a process group of its own
	// that the terminal's signal never reaches, die with it. Not when the
	// signal is ignored (nohup): catching it would undo that.
	f.catchStops = func() func() {
		var caught []os.Signal
		for _, s := range stopSignals {
			if !signal.Ignored(s) {
				signal.Notify(sigs, s)
				caught = append(caught, s)
			}
		}
		return func() {
			if len(caught) > 0 {
				signal.Reset(caught...)
			}
		}
	}
	code, die = execute(f, newCmdRootFor(f, os.Args[1:]), os.Args[1:])
	if intIgnored {
		die = nil
	}
	return code, die
}

// Execute runs pace with args and returns the exit code. Errors are
// reported on f's stderr as one line; a usage error adds one line that
// says where the usage is (exit 2).
func Execute(f *Factory, args []string) int {
	return executeRoot(f, newCmdRootFor(f, args), args)
}

// executeRoot is Execute with the root command made.
func executeRoot(f *Factory, root *cobra.Command, args []string) int {
	code, _ := execute(f, root, args)
	return code
}

// execute is executeRoot, and also returns the signal pace should die of
// (ExitError.Signal).
func execute(f *Factory, root *cobra.Command, args []string) (int, os.Signal) {
	root.SetArgs(bareProgress(args))
	root.SetIn(f.IOStreams.In)
	out, ok := root.OutOrStdout().(*osfiles.KeptErr) // cobra ignores its write errors
	if !ok {
		out = &osfiles.KeptErr{W: f.IOStreams.Out}
		root.SetOut(out)
	}
	root.SetErr(f.IOStreams.ErrOut)
	f.IOStreams.secrets = redact.ForArgs(args)
	started := false // past flag and argument checks
	root.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	cmd, err := root.ExecuteContextC(context.Background())
	if out.Err != nil {
		return printFailed(f.IOStreams, out.Err), nil
	}
	if err == nil {
		return ExitOK, nil
	}
	var exitErr *ExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code, exitErr.Signal
	}
	if errors.Is(err, errSilent) {
		return ExitFailed, nil
	}
	var flagErr *FlagError
	if errors.As(err, &flagErr) || !started {
		f.IOStreams.sayf("%s", userFlagError(err, cmd.Name(), args))
		fmt.Fprintf(f.IOStreams.ErrOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return ExitUsage, nil
	}
	f.IOStreams.sayf("%v", err)
	return ExitFailed, nil
}

// userFlagError rewrites cobra's and pflag's flag errors for users: the
// message, with a hint for flags that other tools have. command is the
// name of the command the flags were given to, and args pace's arguments
// (for the value of GNU parallel's --delay).
func userFlagError(err error, command string, args []string) string {
	msg := err.Error()
	for _, prefix := range []string{"unknown shorthand flag: '", "unknown flag: --"} {
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		name := rest
		if i := strings.IndexAny(rest, "' "); i >= 0 {
			name = rest[:i]
		}
		if hint := spec.FlagHint(name, command == "fetch", args); hint != "" {
			return msg + "; " + hint
		}
	}
	return msg
}
