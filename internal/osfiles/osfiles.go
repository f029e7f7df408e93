// Package osfiles is what pace asks of the system about its open files:
// the limit on them (raised at start, and -j capped by it) and whether a
// standard descriptor was closed when pace started.
package osfiles

// Reserved is how many open files pace keeps for itself (its input, job
// log, stdio, connections) when it caps -j by the open-file limit.
const Reserved = 64

// JobsFor returns how many of jobs can run at once when each holds perJob
// descriptors and at most limit may be open: at least 1, and jobs when a
// job holds none.
func JobsFor(jobs, perJob, limit int) int {
	if perJob <= 0 {
		return jobs
	}
	return min(jobs, max(1, (limit-Reserved)/perJob))
}
