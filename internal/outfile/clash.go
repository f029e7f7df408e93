package outfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Use is a file a run uses: What names it for the user ("--joblog", "-a"),
// and Writes says the run writes it.
type Use struct {
	What   string
	Path   string // "" or "-": none, stdin or stdout
	Writes bool
}

// Clash finds, among the files a run uses, two that are the same file
// when one of them is written: a summary written over the job log, a body
// over the input. It returns the first such pair, in the order given.
// The same file is found however it is spelled (./x, a/../x, a link to x): by identity where it exists
// (os.SameFile), by its cleaned absolute path where it does not.
// Character devices and FIFOs are not files in this sense: /dev/null may
// take any number of outputs, and /dev/stdin and /dev/stdout may be the
// same terminal.
func Clash(uses []Use) (a, b Use, found bool) {
	type file struct {
		Use
		fi  fs.FileInfo // nil: nothing there
		abs string
	}
	var files []file
	for _, p := range uses {
		if p.Path == "" || p.Path == "-" {
			continue
		}
		f := file{Use: p}
		if fi, err := os.Stat(p.Path); err == nil {
			if !fi.Mode().IsRegular() && !fi.IsDir() {
				continue // a device, a FIFO
			}
			f.fi = fi
		} else if errors.Is(err, fs.ErrNotExist) {
			f.abs = canonical(p.Path)
		} else {
			continue // the caller's own check of the path reports it
		}
		files = append(files, f)
	}
	for i, a := range files {
		for _, b := range files[i+1:] {
			if !a.Writes && !b.Writes {
				continue // two inputs may share a file (:::: a a)
			}
			same := a.fi != nil && b.fi != nil && os.SameFile(a.fi, b.fi) ||
				a.fi == nil && b.fi == nil && a.abs == b.abs
			if !same {
				continue
			}
			return a.Use, b.Use, true
		}
	}
	return Use{}, Use{}, false
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
