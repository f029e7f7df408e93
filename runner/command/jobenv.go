package command

import (
	"crypto/rand"
	"strconv"
	"strings"
)

// JobEnv is the variable an Executor sets in every job's environment,
// replacing any value Executor.Env or pace's environment gave it: a value
// of its own to each start of a job (an attempt), the executor's token
// (random, drawn once) and the start's number, "TOKEN.N". The reaper finds
// by it, on Linux, what a job started, even what the job started before
// pace could tell the reaper its process group (a job runs its program as
// soon as it has exec'd), and what left the group: a process whose
// environment holds it, as it was when the process started, is the job's.
// A process started with another environment (env -i, sudo), or that
// overwrites its own (some programs set their title so), is out of reach.
const JobEnv = "PACE_JOB"

// newToken draws an executor's token: 26 letters and digits.
func newToken() string { return rand.Text() }

// jobMark returns the entry of JobEnv in the environment of start n of
// the executor whose token is token.
func jobMark(token string, n uint64) string {
	b := make([]byte, 0, len(JobEnv)+1+len(token)+1+20)
	b = append(append(append(b, JobEnv...), '='), token...)
	b = strconv.AppendUint(append(b, '.'), n, 10)
	return string(b)
}

// withoutJobEnv returns env without its entries of JobEnv, in a new slice
// whose capacity is its length, so that appending to it copies.
func withoutJobEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, JobEnv+"=") {
			out = append(out, kv)
		}
	}
	return out[:len(out):len(out)]
}

// jobEnviron returns the environment of the job whose entry of JobEnv is
// mark: base, which holds none (withoutJobEnv), and mark. It copies base
// once; base is not changed.
func jobEnviron(base []string, mark string) []string {
	return append(base[:len(base):len(base)], mark)
}
