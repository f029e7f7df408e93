package cmd

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is pace's version, set at build time with
// -ldflags "-X github.com/pace-cli/pace/cmd.version=v1.2.3".
var version = ""

// fullVersion returns pace's version: the one stamped at build time, else
// the module's version (go install ...@v1.2.3), else the VCS revision the
// binary was built from (with "-dirty" for uncommitted changes), else
// "dev".
func fullVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		return "dev-" + rev + dirty
	}
	return "dev"
}

// newCmdVersion returns the pace version command.
func newCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pace's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "pace version %s\n", fullVersion())
			return nil // a failed write is execute's to report
		},
	}
}
