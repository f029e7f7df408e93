//go:build !unix

package command

import "os"

// start starts no reaper: without process groups there is nothing to
// kill but the jobs themselves.
func (r *reaper) start(string, []string, string) {}

// killPgid does nothing: there are no process groups.
func killPgid(int) {}

// writeNow writes b: there is no reaper to write to.
func writeNow(w *os.File, b []byte) (int, error) { return w.Write(b) }
