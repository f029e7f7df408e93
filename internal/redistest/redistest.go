// Package redistest starts real redis-server processes for tests: single
// servers on free loopback ports that a test can kill and restart, and
// small Redis Clusters.
//
// When redis-server is not installed the test is skipped, except under CI
// (CI=true), where it fails: CI must run the Redis tests.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 10 * time.Second

// Server is a redis-server process listening on 127.0.0.1. It keeps no
// data on disk, so a restarted server starts empty.
type Server struct {
	t    testing.TB
	port int
	dir  string
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Require returns the path of the named Redis binary, skipping t when it
// is missing, or failing it under CI.
func Require(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("redistest: %s not found (CI=true, so the Redis tests must run): %v", name, err)
	}
	t.Skipf("redistest: %s not found; install redis-server: apt-get install redis-server", name)
	return ""
}

// Start starts a redis-server on a free port with no persistence and a
// fresh directory, waits until it answers PING, and stops it when the test
// ends. extra are more configuration arguments, such as
// "--rename-command", "TIME", "".
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	Require(t, "redis-server")
	dir := t.TempDir()
	var lastErr error
	for range 5 { // another process may take the port between pick and bind
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s := &Server{t: t, port: port, dir: dir, args: append([]string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--save", "",
			"--appendonly", "no",
			"--dir", dir,
		}, extra...)}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("redistest: start redis-server: %v", lastErr)
	return nil
}

// Addr returns the server's address, 127.0.0.1:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

// Kill kills the server at once (SIGKILL) and waits for it to exit. It is
// a no-op if the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// signal sends sig to the server's process, if it runs.
func (s *Server) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal redis-server: %v", err)
	}
}

// Restart starts a killed server again on the same port, empty. It
// retries for a while if the port is not free yet.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: restart redis-server on port %d: %v", s.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Do sends one command to the server and returns its reply as text:
// simple strings, integers and bulk strings as they are, an array as its
// elements on separate lines. An error reply is returned as an error.
func (s *Server) Do(args ...string) (string, error) {
	return do(s.Addr(), args...)
}

// start runs the server and waits for PING. It requires s.cmd == nil.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := new(lockedWriter)
	cmd := exec.Command("redis-server", s.args...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.Dir = s.dir
	setPdeathsig(cmd)
	if err := startCmd(cmd); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(startTimeout)
	for {
		if r, err := do(s.Addr(), "PING"); err == nil && r == "PONG" {
			break
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server %s exited: %s", strings.Join(s.args, " "), out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server %s did not answer PING: %s", strings.Join(s.args, " "), out.String())
		}
	}
	s.cmd, s.done = cmd, done
	return nil
}

// Cluster is a Redis Cluster of masters without replicas.
type Cluster struct {
	Servers []*Server
}

// Addrs returns the addresses of the cluster's nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// StartCluster starts n redis-server processes in cluster mode, joins
// them into one cluster of n masters with redis-cli --cluster create, and
// waits until every node reports cluster_state:ok. n must be at least 3.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	Require(t, "redis-server")
	cli := Require(t, "redis-cli")
	if n < 3 {
		t.Fatalf("redistest: a cluster needs at least 3 masters, not %d", n)
	}
	c := &Cluster{}
	for i := range n {
		busPort, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		dir := filepath.Join(t.TempDir(), strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := Start(t,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(busPort),
			"--cluster-node-timeout", "2000",
		)
		c.Servers = append(c.Servers, s)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	deadline := time.Now().Add(startTimeout)
	for _, s := range c.Servers {
		for {
			info, err := s.Do("CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster not ok after %s: %q %v", startTimeout, info, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// freePort returns a loopback TCP port that was free a moment ago, never
// Redis's default 6379.
func freePort() (int, error) {
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if port != 6379 {
			return port, nil
		}
	}
}

// do sends one command in RESP and reads one reply.
func do(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(conn))
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// lockedWriter lets the server's output be read while it is written.
type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
