//go:build !unix

package command

// start starts no reaper: without process groups there is nothing to
// kill but the jobs themselves.
func (r *reaper) start(string, []string) {}

// killPgid does nothing: there are no process groups.
func killPgid(int) {}
