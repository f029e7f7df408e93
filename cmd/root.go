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
)

const rootLong = `pace runs jobs (pace run) while keeping several rate rules at once, such
as 10/s AND 500/min AND 10000/day, plus a cap on jobs in flight.

"pace [flags] -- COMMAND..." is short for "pace run [flags] -- COMMAND...".
See "pace run --help" for rules, placeholders and interrupts, and
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
		Version:       version,
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
			opts.Command = args
			return runRun(cmd.Context(), opts)
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetVersionTemplate("pace version {{.Version}}\n")
	root.Flags().SetInterspersed(false)
	addRunFlags(root, opts)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err: err} })
	root.AddCommand(NewCmdRun(f, nil), NewCmdFetch(f, nil), NewCmdAudit(f, nil), newCmdVersion(f))
	root.InitDefaultCompletionCmd()
	return root
}

// Main runs pace with the process's arguments, streams and signals, and
// returns the exit code.
func Main() int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// Handling SIGPIPE (and dropping it) makes a write to a closed stdout
	// fail with EPIPE instead of killing pace, so pace can kill its jobs
	// first (see pipeWatch). Children still start with the default action.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	return Execute(NewFactory(sigs), os.Args[1:])
}

// Execute runs pace with args and returns the exit code. Errors are
// reported on f's stderr: usage errors with the usage (exit 2), others as
// one line.
func Execute(f *Factory, args []string) int {
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	started := false // past flag and argument checks
	root.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	cmd, err := root.ExecuteContextC(context.Background())
	if err == nil {
		return ExitOK
	}
	var exitErr *ExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code
	}
	if errors.Is(err, errSilent) {
		return ExitFailed
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "pace: %v\n", err)
	var flagErr *FlagError
	if errors.As(err, &flagErr) || !started {
		fmt.Fprintf(f.IOStreams.ErrOut, "\n%s", cmd.UsageString())
		return ExitUsage
	}
	return ExitFailed
}
