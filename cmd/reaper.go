package cmd

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/runner/command"
)

// newCmdReaper returns the hidden command that pace run starts with its
// first job (command.Executor.Reaper), and pace exec and pace proxy with
// their command (command.Tether): it reads the jobs' process groups on
// stdin, a pipe from pace, and when the pipe ends (pace exited, or was
// killed outright) kills the groups still running, and what holds a
// running job's $PACE_JOB. Not for users.
func newCmdReaper(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "reaper",
		Short:  "Kill what pace's jobs started once pace ends (started by pace run, exec and proxy)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if f.IOStreams.IsStdinTTY() {
				return errors.New("pace reaper is started by pace run, exec and proxy, with a pipe on its stdin")
			}
			return command.RunReaper(f.IOStreams.In)
		},
	}
}
