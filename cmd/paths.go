package cmd

import (
	"github.com/pace-cli/pace/internal/outfile"
)

// pathFlag is a file that one flag names, for the check that no output
// lands on another flag's file.
type pathFlag struct {
	flag   string // as the user knows it: "--joblog", "-a", "the job log"
	path   string
	output bool // the run writes it
}

// checkClashes refuses, before anything runs, two flags that name the
// same file when one of them writes it (outfile.Clash).
func checkClashes(paths []pathFlag) error {
	uses := make([]outfile.Use, len(paths))
	for i, p := range paths {
		uses[i] = outfile.Use{What: p.flag, Path: p.path, Writes: p.output}
	}
	a, b, ok := outfile.Clash(uses)
	switch {
	case !ok:
		return nil
	case a.Path == b.Path:
		return flagErrorf("%s and %s both name %s: give each its own file", a.What, b.What, a.Path)
	}
	return flagErrorf("%s %s and %s %s name the same file: give each its own file", a.What, a.Path, b.What, b.Path)
}

// checkPaths refuses clashing files among the input (-a), more the
// command reads or writes (such as :::: files, -o), the job log and the
// summary file; and a summary file that could not be written, which
// would otherwise be found only at the end.
func (o *CommonOptions) checkPaths(more ...pathFlag) error {
	paths := append([]pathFlag{{flag: "-a", path: o.Input}}, more...)
	err := checkClashes(append(paths,
		pathFlag{flag: "--joblog", path: o.JobLog, output: true},
		pathFlag{flag: "--summary-file", path: o.SummaryFile, output: true}))
	if err != nil {
		return err
	}
	if o.SummaryFile != "" {
		if err := outfile.Check(o.SummaryFile); err != nil {
			return flagErrorf("--summary-file %v", err)
		}
	}
	return nil
}
