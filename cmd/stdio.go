package cmd

import (
	"fmt"
	"os"

	"github.com/pace-cli/pace/internal/osfiles"
)

// checkStdio refuses to run with stdout closed (pace ... >&-): job output
// would vanish, and a job printing nothing would not even tell. A
// descriptor closed when pace started is the null device reopened
// read-write (osfiles.ReopenedNull).
func checkStdio() (code int, ok bool) {
	if osfiles.ReopenedNull(1) {
		fmt.Fprintln(os.Stderr, "pace: stdout is closed; to discard job output, send it to /dev/null (> /dev/null)")
		return ExitUsage, false
	}
	return 0, true
}
