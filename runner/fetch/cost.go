package fetch

import (
	"fmt"
	"os"
	"strings"

	"github.com/pace-cli/pace/runner"
)

// BodyLen returns the length of job's request body: the expanded -d
// string, or the size of the file -d @FILE names; 0 without one. A
// pipe or a device has no size to give: an error.
func (e *Executor) BodyLen(job *runner.Job) (int64, error) {
	if !e.opts.HasData {
		return 0, nil
	}
	d, err := e.data.Expand(values(job))
	if err != nil {
		return 0, err
	}
	if name, ok := strings.CutPrefix(d, "@"); ok {
		fi, err := os.Stat(name)
		if err != nil {
			return 0, fmt.Errorf("data file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			// Its size is unknown until a request reads it (streamBody).
			return 0, fmt.Errorf("data file %s is not a regular file (a pipe or a device): {body-len} needs a file whose size is known", name)
		}
		return fi.Size(), nil
	}
	return int64(len(d)), nil
}
