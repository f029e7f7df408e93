package cmd

import (
	"github.com/pace-cli/pace/internal/limiter"
)

// backendOptions returns what opening the backend of a run with o needs
// (package limiter).
func (o *CommonOptions) backendOptions() limiter.Options {
	return limiter.Options{Rules: o.allRules(), Margin: o.Margin, Reorder: o.Reorder, Shared: o.Redis.shared(), Verbose: o.Verbose}
}

// shared returns the checked flags as package limiter takes them.
func (o *RedisOptions) shared() limiter.Shared {
	return limiter.Shared{URL: o.URL, Key: o.Key, Local: o.Local(), State: o.State, GlobalJobs: o.GlobalJobs, Timeout: o.Timeout}
}
