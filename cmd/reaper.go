package cmd

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/runner/command"
)

// newCmdReaper returns the hidden command that pace run starts with its
// first job (command.Executor.Reaper): it reads the jobs' process groups
// on stdin, a pipe from pace, and when the pipe ends (pace exited, or was
// killed outright) kills the groups still running. Not for users.
func newCmdReaper(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "reaper",
		Short:  "Kill the process groups pace run names on stdin once it ends (started by pace run)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if f.IOStreams.IsStdinTTY() {
				return errors.New("pace reaper is started by pace run, with a pipe on its stdin")
			}
			return command.RunReaper(f.IOStreams.In)
		},
	}
}
