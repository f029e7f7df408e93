package cmd

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.IOStreams.IsStdinTTY() {
				return errors.New("pace reaper is started by pace run, with a pipe on its stdin")
			}
			// pace's signals are not the reaper's: it must outlive pace.
			signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
			// Nor is its name (Linux): `killall -9 pace` and `pkill -9
			// pace` kill pace and leave the reaper to kill its jobs.
			os.WriteFile("/proc/self/comm", []byte("reaper"), 0)
			return command.Reap(f.IOStreams.In)
		},
	}
}

// reaperFor returns the program and argv of pace's reaper, as Main starts
// pace: nil where the running executable cannot be found.
func reaperFor() (path string, argv []string) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil
	}
	return exe, []string{os.Args[0], "reaper"}
}
