//go:build !linux

package command

// sysProcs returns nil: without /proc's environments, the reaper kills
// the jobs' groups only.
func sysProcs() procs { return nil }
