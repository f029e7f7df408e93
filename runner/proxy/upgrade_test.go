package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
)

// Upgraded connections (101 Switching Protocols, websockets) pass through
// the proxy: one admission at the upgrade, then bytes both ways until one
// side closes, the slot held all along.

// echoUpgrade is an upstream that switches /ws to the protocol "echo":
// it greets with "hello\n", then answers each line L with "echo: L\n";
// a line "bye" makes it close the connection. headers receives the
// upgrade request's headers; closed is closed once its connection ended.
func echoUpgrade(t *testing.T) (url string, headers chan http.Header, closed chan struct{}) {
	headers, closed = make(chan http.Header, 10), make(chan struct{}, 10)
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Clone()
		if !strings.EqualFold(r.Header.Get("Upgrade"), "echo") {
			http.Error(w, "want Upgrade: echo", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { conn.Close(); closed <- struct{}{} }()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nhello\n")
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			if line == "bye\n" {
				return
			}
			brw.WriteString("echo: " + line)
			brw.Flush()
		}
	})
	return up.URL, headers, closed
}

// dialUpgrade asks the proxy to switch /ws to "echo" on a connection of
// its own and checks the answer and the greeting.
func dialUpgrade(t *testing.T, tp *testProxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(tp.url, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: proxy.test\r\nUpgrade: echo\r\nConnection: Upgrade\r\nX-Drop: 1\r\nConnection: X-Drop\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the upgrade's answer: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), "echo") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		t.Fatalf("the upgrade's answer: %s %v %q, want 101 with Upgrade: echo", resp.Status, resp.Header, b)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("the upstream's greeting: %q, %v", line, err)
	}
	return conn, br
}

// exchange sends line and checks the echo.
func exchange(t *testing.T, conn net.Conn, br *bufio.Reader, line string) {
	t.Helper()
	if _, err := io.WriteString(conn, line+"\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := br.ReadString('\n'); err != nil || got != "echo: "+line+"\n" {
		t.Fatalf("echo of %q: %q, %v", line, got, err)
	}
}

// eventually polls cond for up to 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: not %s", what)
		}
	}
}

// A websocket-like upgrade goes through with its Upgrade headers, the
// connection's own hop-by-hop headers dropped; bytes go both ways; with
// -j 1 it holds the one slot until the client closes it, and a request
// behind it waits until then; it is one request admitted, answered 101.
func TestUpgradeHoldsItsSlotUntilTheClientCloses(t *testing.T) {
	url, headers, closed := echoUpgrade(t)
	tp := startProxy(t, url, "1000/s", 1, nil)
	conn, br := dialUpgrade(t, tp)
	h := <-headers
	if !strings.EqualFold(h.Get("Connection"), "Upgrade") || h.Get("Upgrade") != "echo" || h.Get("X-Drop") != "" {
		t.Errorf("the upstream got %v: want Connection: Upgrade, Upgrade: echo and no X-Drop", h)
	}
	for _, line := range []string{"one", "two", strings.Repeat("x", 100<<10)} {
		exchange(t, conn, br, line)
	}
	if st := tp.p.Stats(); st.InFlight != 1 {
		t.Errorf("with the connection open, in flight = %d, want 1", st.InFlight)
	}
	behind := make(chan int, 1)
	go func() {
		resp, err := http.Get(tp.url + "/ok")
		if err != nil {
			behind <- 0
			return
		}
		resp.Body.Close()
		behind <- resp.StatusCode
	}()
	eventually(t, "one request waiting behind the upgraded connection", func() bool { return tp.p.Stats().Waiting == 1 })
	select {
	case code := <-behind:
		t.Fatalf("a request went (%d) while the upgraded connection held the only slot", code)
	default:
	}
	exchange(t, conn, br, "still there")
	conn.Close()
	select {
	case code := <-behind:
		if code != 200 {
			t.Errorf("the request behind: %d, want 200", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request behind the upgraded connection still waits 10s after the client closed it")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("the upstream's connection is still open 10s after the client closed")
	}
	var ws []*runner.Result
	tp.doneWhen(t, "the upgrade reported", func(evs []runner.Event) bool {
		ws = ws[:0]
		for _, ev := range evs {
			if ev.Job.Argv[1] == url+"/ws" {
				ws = append(ws, ev.Result)
			}
		}
		return len(ws) > 0
	})
	if len(ws) != 1 || !ws[0].OK() || ws[0].HTTP.StatusCode != 101 || ws[0].Job.Cost != 1 {
		t.Fatalf("the upgrade's results: %+v, want one, ok, 101, cost 1", ws)
	}
	if ws[0].HTTP.Bytes < 100<<10 {
		t.Errorf("the upgrade's bytes from the upstream: %d, want at least %d", ws[0].HTTP.Bytes, 100<<10)
	}
	// The request behind may still hold its slot: its client has the
	// answer before the proxy gives the slot back.
	eventually(t, "nothing in flight", func() bool { return tp.p.Stats().InFlight == 0 })
	if st := tp.p.Stats(); st.Status[101] != 1 {
		t.Errorf("stats after: 101s %d; want 1", st.Status[101])
	}
}

// An upstream that closes the upgraded connection ends it for the client
// too, and frees the slot.
func TestUpgradeClosedByTheUpstreamFreesItsSlot(t *testing.T) {
	url, _, _ := echoUpgrade(t)
	tp := startProxy(t, url, "", 1, nil)
	conn, br := dialUpgrade(t, tp)
	exchange(t, conn, br, "one")
	io.WriteString(conn, "bye\n")
	if b, err := io.ReadAll(br); err != nil || len(b) != 0 {
		t.Errorf("after the upstream closed: read %q, %v; want EOF", b, err)
	}
	conn.Close()
	eventually(t, "the slot free", func() bool { return tp.p.Stats().InFlight == 0 })
	tp.stillServes(t)
}

// CloseUpgraded (the end of the grace after an interrupt) closes the
// upgraded connections still open, which a server's Shutdown leaves
// alone, and their requests are reported.
func TestCloseUpgradedEndsOpenConnections(t *testing.T) {
	url, _, closed := echoUpgrade(t)
	tp := startProxy(t, url, "", 0, nil)
	conn, br := dialUpgrade(t, tp)
	exchange(t, conn, br, "one")
	tp.p.CloseUpgraded()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's connection is still open 10s after CloseUpgraded")
	}
	if b, err := io.ReadAll(br); err != nil || len(b) != 0 {
		t.Errorf("the client's connection after CloseUpgraded: read %q, %v; want EOF", b, err)
	}
	tp.doneN(t, 1)
	if st := tp.p.Stats(); st.InFlight != 0 {
		t.Errorf("in flight after CloseUpgraded: %d", st.InFlight)
	}
}

// An upstream that answers 101 with another protocol than asked is a bad
// gateway, and the slot comes back.
func TestUpgradeToAnotherProtocolIs502(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(io.Discard, brw)
	})
	tp := startProxy(t, up.URL, "", 1, nil)
	status, err := rawRequest(t, tp, "GET /ws HTTP/1.1\r\nHost: proxy.test\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
	if err != nil || !strings.Contains(status, " 502 ") {
		t.Errorf("an upgrade to another protocol: %q, %v; want 502", status, err)
	}
	tp.stillServes(t) // -j 1: the slot came back
	if evs := tp.doneN(t, 2); len(evs) != 2 || evs[0].Result.OK() {
		t.Errorf("events: %+v, want the upgrade failed, then /ok", evs)
	}
}
