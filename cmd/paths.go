package cmd

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

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
// same file when one of them writes it: a summary written over the job
// log, a body over the input. The same file is found however it is
// spelled (./x, a/../x, a link to x): by identity where it exists
// (os.SameFile), by its cleaned absolute path where it does not.
// Character devices and FIFOs are not files in this sense: /dev/null may
// take any number of outputs, and /dev/stdin and /dev/stdout may be the
// same terminal.
func checkClashes(paths []pathFlag) error {
	type file struct {
		pathFlag
		fi  fs.FileInfo // nil: nothing there
		abs string
	}
	var files []file
	for _, p := range paths {
		if p.path == "" || p.path == "-" {
			continue
		}
		f := file{pathFlag: p}
		if fi, err := os.Stat(p.path); err == nil {
			if !fi.Mode().IsRegular() && !fi.IsDir() {
				continue // a device, a FIFO
			}
			f.fi = fi
		} else if errors.Is(err, fs.ErrNotExist) {
			f.abs = canonical(p.path)
		} else {
			continue // the flag's own check reports it
		}
		files = append(files, f)
	}
	for i, a := range files {
		for _, b := range files[i+1:] {
			if !a.output && !b.output {
				continue // two inputs may share a file (:::: a a)
			}
			same := a.fi != nil && b.fi != nil && os.SameFile(a.fi, b.fi) ||
				a.fi == nil && b.fi == nil && a.abs == b.abs
			if !same {
				continue
			}
			if a.path == b.path {
				return flagErrorf("%s and %s both name %s: give each its own file", a.flag, b.flag, a.path)
			}
			return flagErrorf("%s %s and %s %s name the same file: give each its own file", a.flag, a.path, b.flag, b.path)
		}
	}
	return nil
}

// canonical returns the absolute path of a file that does not exist,
// with the links of its directory resolved.
func canonical(name string) string {
	abs, err := filepath.Abs(name)
	if err != nil {
		return filepath.Clean(name)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
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
