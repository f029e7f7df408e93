package redistest

import (
	"strings"
	"testing"
	"time"
)

func TestStartKillRestart(t *testing.T) {
	s := Start(t)
	if s.Port() == 6379 || !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr() = %s, want a loopback port other than 6379", s.Addr())
	}
	if r, err := s.Do("SET", "k", "v"); err != nil || r != "OK" {
		t.Fatalf("SET = %q, %v", r, err)
	}
	if r, err := s.Do("GET", "k"); err != nil || r != "v" {
		t.Fatalf("GET = %q, %v; want v", r, err)
	}
	addr := s.Addr()
	s.Kill()
	if _, err := s.Do("PING"); err == nil {
		t.Fatal("PING answered after Kill")
	}
	s.Kill() // no-op
	s.Restart()
	if s.Addr() != addr {
		t.Errorf("restarted on %s, want %s", s.Addr(), addr)
	}
	// No persistence: the restarted server is empty.
	if r, err := s.Do("EXISTS", "k"); err != nil || r != "0" {
		t.Errorf("EXISTS k after restart = %q, %v; want 0", r, err)
	}
	if _, err := s.Do("NOSUCHCOMMAND"); err == nil {
		t.Error("an error reply came back as success")
	}
}

func TestStartExtraArgs(t *testing.T) {
	s := Start(t, "--rename-command", "TIME", "")
	if _, err := s.Do("TIME"); err == nil {
		t.Error("TIME answered, want it renamed away")
	}
}

// TestStopContinue: a stopped server answers nothing, and answers again
// once continued.
func TestStopContinue(t *testing.T) {
	s := Start(t)
	s.Stop()
	answered := make(chan error, 1)
	go func() {
		_, err := s.Do("PING")
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("PING answered (%v) while the server was stopped", err)
	case <-time.After(200 * time.Millisecond):
	}
	s.Continue()
	if err := <-answered; err != nil {
		t.Errorf("PING sent while stopped = %v once continued, want PONG", err)
	}
}
