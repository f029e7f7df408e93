package cmd

import (
	"errors"
	"fmt"
	"testing"
)

func TestUserMessage(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"runner: admit job 3: redis: connection refused: throttle: backend unavailable",
			"admit job 3: redis: connection refused: backend unavailable"},
		{"fetch: job 2: GET x: localstore: locked; redisrate: quota", "job 2: GET x: locked; quota"},
		{"nothing to strip", "nothing to strip"},
	} {
		if got := userMessage(errors.New(tt.in)); got != tt.want {
			t.Errorf("userMessage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	fe := flagErrorf("bad %s", "flag")
	if fe.Error() != "bad flag" || errors.Unwrap(fe) == nil {
		t.Errorf("flagErrorf = %q (unwraps to %v)", fe, errors.Unwrap(fe))
	}
	var exit error = &ExitError{Code: 3}
	if exit.Error() != "exit status 3" || !errors.Is(exit, errSilent) || !errors.Is(fmt.Errorf("x: %w", exit), errSilent) {
		t.Errorf("ExitError = %q, errors.Is(errSilent) = %v; want exit status 3, true", exit, errors.Is(exit, errSilent))
	}
}
