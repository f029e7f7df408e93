package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as strictd when re-run by
// TestStrictd, so the test needs no separate build.
func TestMain(m *testing.M) {
	if os.Getenv("STRICTD_TEST_MAIN") == "1" {
		os.Args = append([]string{"strictd"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestStrictd(t *testing.T) {
	portfile := filepath.Join(t.TempDir(), "port")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	callsfile := filepath.Join(t.TempDir(), "calls")
	reqfile := filepath.Join(t.TempDir(), "requests")
	cmd := exec.Command(exe, "-rules", "2/1h", "-portfile", portfile, "-calls", callsfile, "-requests", reqfile)
	cmd.Env = append(os.Environ(), "STRICTD_TEST_MAIN=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	var port string
	for deadline := time.Now().Add(10 * time.Second); port == "" && time.Now().Before(deadline); {
		data, _ := os.ReadFile(portfile)
		port = strings.TrimSpace(string(data))
		if port == "" {
			time.Sleep(10 * time.Millisecond) // waiting for a real process
		}
	}
	if port == "" {
		t.Fatal("strictd wrote no port file within 10s")
	}
	base := "http://127.0.0.1:" + port
	var codes []int
	for _, path := range []string{"/a", "/b", "/stats", "/c"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if want := []int{200, 200, 200, 429}; !slices.Equal(codes, want) {
		t.Errorf("GET /a /b /stats /c under 2/1h = %v, want %v (/stats is not an arrival)", codes, want)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading final stats line: %v", err)
	}
	var got stats
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("final line %q: %v", line, err)
	}
	if got.Accepted != 2 || got.Refused != 1 || got.First == 0 || got.Last < got.First || got.MakespanNS != got.Last-got.First {
		t.Errorf("final stats = %+v, want 2 accepted, 1 refused, consistent times", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("strictd exit after SIGTERM: %v, want status 0", err)
	}
	data, err := os.ReadFile(callsfile)
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); err != nil || len(lines) != 2 ||
		lines[0] != strconv.FormatInt(got.First, 10)+" 1" || lines[1] != strconv.FormatInt(got.Last, 10)+" 1" {
		t.Errorf("-calls file = %q, %v; want the 2 accepted arrivals \"UNIXNANO 1\"", data, err)
	}
	data, err = os.ReadFile(reqfile)
	want := strconv.FormatInt(got.First, 10) + " accepted /a\n" + strconv.FormatInt(got.Last, 10) + " accepted /b\n"
	if err != nil || !strings.HasPrefix(string(data), want) || !strings.HasSuffix(string(data), " refused /c\n") ||
		strings.Count(string(data), "\n") != 3 {
		t.Errorf("-requests file = %q, %v; want %q and then \"UNIXNANO refused /c\" (/stats is not a request)", data, err, want)
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:0": true, "[::1]:8080": true, "localhost:0": true,
		":0": false, "0.0.0.0:80": false, "192.168.1.2:0": false, "example.com:80": false, "nonsense": false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

// TestWriteAtomicKeepsStreams: -calls or -requests onto a FIFO (or
// /dev/null, which a test must not touch) writes into it; the old
// rename of a temporary file over it replaced it with a regular file,
// as a bench run with -calls /dev/null once did to the machine's
// /dev/null (as root).
func TestWriteAtomicKeepsStreams(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "calls")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := writeAtomic(fifo, "1 1\n"); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "1 1\n" {
		t.Errorf("the FIFO's reader got %q, want %q", s, "1 1\n")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("after writeAtomic, %s is %v (%v), want the FIFO still", fifo, fi.Mode(), err)
	}
}
