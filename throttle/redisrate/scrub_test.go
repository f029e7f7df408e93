package redisrate_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/tcptest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// echoServer is not Redis: it answers each line it reads with an error
// that repeats it, as a misrouted port or a proxy may.
func echoServer(t *testing.T, reply string) string {
	t.Helper()
	return tcptest.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			// One command: *N, then N bulk strings; echoed whole.
			head, err := br.ReadString('\n')
			if err != nil {
				return
			}
			var n int
			fmt.Sscanf(head, "*%d", &n)
			var seen strings.Builder
			for range 2 * n {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if !strings.HasPrefix(line, "$") {
					seen.WriteString(strings.TrimSpace(line) + " ")
				}
			}
			c.Write([]byte(reply + seen.String() + "\r\n"))
		}
	})
}

// A server that echoes what it was sent never puts the password (or a
// user name, which may be a token) into an error.
func TestErrorsNeverHoldThePassword(t *testing.T) {
	for _, reply := range []string{"-ERR ", "+"} {
		addr := echoServer(t, reply)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l, err := redisrate.Dial(ctx, "redis://tok3nUser:TopSecretPW@"+addr, redisrate.Options{
			Key: "k", Rules: []throttle.Rule{{N: 1, Window: time.Second}}, Timeout: 200 * time.Millisecond})
		if err == nil {
			_, err = l.Admit(ctx, 1)
			l.Close()
		}
		cancel()
		if err == nil {
			t.Fatalf("reply %q: no error from a server that is not Redis", reply)
		}
		if msg := err.Error(); strings.Contains(msg, "TopSecretPW") || strings.Contains(msg, "tok3nUser") {
			t.Errorf("reply %q: error %q holds a secret", reply, msg)
		}
	}
}
