package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// version is pace's version, set at build time with
// -ldflags "-X github.com/pace-cli/pace/cmd.version=v1.2.3".
var version = "dev"

// newCmdVersion returns the pace version command.
func newCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pace's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(f.IOStreams.Out, "pace version %s\n", version)
			return err
		},
	}
}
