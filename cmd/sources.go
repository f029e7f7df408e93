package cmd

import (
	"io"
	"slices"
	"strings"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/throttle"
)

// openInput opens the run's items (items.OpenSources).
func (opts *RunOptions) openInput(stdin io.Reader) (*items.Input, error) {
	return items.OpenSources(opts.Sources, opts.Common.Input, opts.Common.Null, stdin)
}

// trapFlags are pace's own flags that, written after the command, are
// most likely meant for pace: an argument after the command that is one
// of them (or -r followed by a rule) makes pace stop with exit 2, unless
// -- came before the command. Flags that commands commonly have too
// (--timeout, --verbose, -j N, ...) are left alone.
var trapFlags = []string{"--rate", "--jobs", "--joblog", "--resume", "--resume-failed", "--redis",
	"--global-jobs", "--margin", "--retries", "--grace", "--keep-order", "--dry-run", "--progress",
	"--summary", "--summary-file", "--shell", "--colsep", "--halt", "--cost-rate", "--cost"}

// paceFlagAfterCommand returns a usage error when an argument after the
// command looks like one of pace's own flags.
func paceFlagAfterCommand(args []string) error {
	for i, a := range args {
		if i == 0 {
			continue // the program
		}
		name, _, _ := strings.Cut(a, "=")
		flag := ""
		switch {
		case slices.Contains(trapFlags, name):
			flag = a
		case a == "-r" && i+1 < len(args) && isRule(args[i+1]):
			flag = a + " " + args[i+1]
		case strings.HasPrefix(a, "-r") && isRule(a[2:]):
			flag = a
		}
		if flag != "" {
			return flagErrorf("%q after the command goes to the command, not to pace; "+
				"put pace's flags before the command, or write -- before the command if %s is meant for it", flag, a)
		}
	}
	return nil
}

// isRule reports whether s reads as a rule list.
func isRule(s string) bool {
	rs, err := throttle.ParseRules(s)
	return err == nil && len(rs) > 0
}
