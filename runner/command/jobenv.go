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
	var num [20]byte
	var b strings.Builder
	b.Grow(len(JobEnv) + 1 + len(token) + 1 + len(num))
	b.WriteString(JobEnv)
	b.WriteByte('=')
	b.WriteString(token)
	b.WriteByte('.')
	b.Write(strconv.AppendUint(num[:0], n, 10))
	return b.String()
}

// withoutJobEnv returns env without its entries of JobEnv, in a new
// slice.
func withoutJobEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, JobEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// jobEnviron returns the environment of the job whose entry of JobEnv is
// mark: base, which holds none (withoutJobEnv), and mark, in one new
// slice of their length (append would double base's).
func jobEnviron(base []string, mark string) []string {
	env := make([]string, len(base)+1)
	copy(env, base)
	env[len(base)] = mark
	return env
}
