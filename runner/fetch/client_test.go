package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/runner/internal/direct"
)

func TestNewClientPoolAndProxy(t *testing.T) {
	c := NewClient(ClientOptions{Conns: 32})
	tr := c.Transport.(*direct.Transport).Transport
	if tr.MaxIdleConnsPerHost != 32 || tr.Proxy == nil || !tr.ForceAttemptHTTP2 || tr.DisableKeepAlives {
		t.Errorf("transport: idle per host %d, proxy set %v, h2 %v, keep-alive %v; want 32, true, true, true",
			tr.MaxIdleConnsPerHost, tr.Proxy != nil, tr.ForceAttemptHTTP2, !tr.DisableKeepAlives)
	}
	if tr := NewClient(ClientOptions{}).Transport.(*direct.Transport); tr.MaxIdleConnsPerHost != 2 {
		t.Errorf("Conns 0: idle per host %d, want 2", tr.MaxIdleConnsPerHost)
	}
}

func TestFetchRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "landed\n")
			return
		}
		http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusFound)
	})
	srv := serve(t, mux)
	e := newFetch(t, Options{})
	if res := fetchOne(t, e, srv.URL+"/hop/10"); !res.OK() || string(res.Stdout.Bytes()) != "landed\n" {
		t.Errorf("10 redirects: %s, %q; want success", res.Status(), res.Stdout.Bytes())
	} else if hops := res.HTTP.Hops; len(hops) != 10 || hops[0].URL != srv.URL+"/hop/9" || hops[9].URL != srv.URL+"/hop/0" ||
		hops[9].Method != "GET" || hops[9].Again || hops[0].Start.Before(res.Start) || hops[9].Start.Before(hops[0].Start) {
		// Each redirect followed is a call of its own, for the job log.
		t.Errorf("10 redirects: hops %+v; want the 10 calls to /hop/9 ... /hop/0, in order, after the item's", hops)
	}
	u, _ := url.Parse(srv.URL + "/hop/11")
	u.User = url.UserPassword("ann", "pw-9876")
	res := fetchOne(t, e, u.String())
	if res.OK() || !errors.Is(res.Err, errTooManyRedirects) || !errors.Is(res.Err, runner.ErrPermanent) {
		t.Errorf("11 redirects: %v, want a permanent too-many-redirects error", res.Err)
	}
	if msg := res.Err.Error(); strings.Contains(msg, "pw-9876") {
		t.Errorf("11 redirects: error %q shows the password", msg)
	}
	// The redirects kept the URL's user info: their URLs, which the job
	// log writes, show it redacted.
	if hops := res.HTTP.Hops; len(hops) != 10 || strings.Contains(hops[0].URL, "pw-9876") || !strings.Contains(hops[0].URL, "/hop/10") {
		t.Errorf("11 redirects: hops %+v; want the 10 followed, without the password", hops)
	}

	// With MaxRedirects 2 the third fails; with -1 the 3xx itself does.
	e = newFetch(t, Options{Client: NewClient(ClientOptions{MaxRedirects: 2})})
	if res := fetchOne(t, e, srv.URL+"/hop/2"); !res.OK() {
		t.Errorf("MaxRedirects 2, 2 redirects: %s, want success", res.Status())
	}
	if res := fetchOne(t, e, srv.URL+"/hop/3"); !errors.Is(res.Err, errTooManyRedirects) {
		t.Errorf("MaxRedirects 2, 3 redirects: %v, want too many redirects", res.Err)
	}
	e = newFetch(t, Options{Client: NewClient(ClientOptions{MaxRedirects: -1})})
	var se *statusError
	if res := fetchOne(t, e, srv.URL+"/hop/1"); !errors.As(res.Err, &se) || se.Code != http.StatusFound {
		t.Errorf("MaxRedirects -1: %v, want HTTP 302", res.Err)
	}
}

// A redirect to another scheme than http or https (file:, ftp:) fails its
// item for good, naming where it led: it was a network error, retried,
// each attempt a call the server counted.
func TestFetchRedirectToOtherScheme(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(http.StatusFound)
	}))
	e := newFetch(t, Options{})
	for _, to := range []string{"file:///etc/passwd", "ftp://127.0.0.1/x", "FILE:///etc/hosts"} {
		res := fetchOne(t, e, srv.URL+"/?to="+url.QueryEscape(to))
		if res.OK() || !errors.Is(res.Err, runner.ErrPermanent) || !strings.Contains(res.Err.Error(), "after redirect to "+to) {
			t.Errorf("redirect to %s: %v; want a permanent error naming it", to, res.Err)
		}
	}
}

func TestFetchRedirectDropsSecretHeadersOffOrigin(t *testing.T) {
	other := &reqRecorder{}
	otherSrv := serve(t, other) // same host, another port: another origin
	same := &reqRecorder{}
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherSrv.URL+"/landing", http.StatusFound)
	})
	mux.HandleFunc("/stay", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/here", http.StatusFound)
	})
	mux.Handle("/here", same)
	srv := serve(t, mux)
	e := newFetch(t, Options{Headers: []string{
		"Authorization: Bearer abc", "X-Api-Key: k", "Cookie: c=1", "Private-Token: pt", "X-Trace: t1",
		"apikey: sb", "X-MBX-APIKEY: bn", "Token: tk", "X-Auth: xa",
	}})
	fetchOne(t, e, srv.URL+"/away")
	fetchOne(t, e, srv.URL+"/stay")
	got := other.last(t).header
	for _, name := range []string{"Authorization", "X-Api-Key", "Cookie", "Private-Token", "Apikey", "X-Mbx-Apikey", "Token", "X-Auth"} {
		if v := got.Get(name); v != "" {
			t.Errorf("redirect to another origin: %s = %q, want it dropped", name, v)
		}
	}
	if got.Get("X-Trace") != "t1" {
		t.Errorf("redirect to another origin: X-Trace = %q, want it kept", got.Get("X-Trace"))
	}
	kept := same.last(t).header
	if kept.Get("X-Api-Key") != "k" || kept.Get("Authorization") != "Bearer abc" || kept.Get("Private-Token") != "pt" {
		t.Errorf("redirect within the origin: headers %v, want the credentials kept", kept)
	}
}

// TestFetchRefererPolicy: a redirect carries the Referer that a browser's
// strict-origin-when-cross-origin policy sends: the whole URL (without
// user info and fragment) within the origin, only "scheme://host/" to
// another, none from https to http. A secret in the query never reaches
// another host.
func TestFetchRefererPolicy(t *testing.T) {
	const key, sig = "sk-live-4242", "sig-777"
	// The plain servers: a, and b under another name ("localhost").
	aHere, bLanding := &reqRecorder{}, &reqRecorder{}
	b := serve(t, bLanding)
	bURL := strings.Replace(b.URL, "127.0.0.1", "localhost", 1)
	aMux := http.NewServeMux()
	aMux.HandleFunc("/cross", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, bURL+"/landing", http.StatusFound)
	})
	aMux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/here", http.StatusFound)
	})
	aMux.Handle("/here", aHere)
	a := serve(t, aMux)
	// The TLS servers: s, and another port of it, d.
	dLanding := &reqRecorder{}
	d := httptest.NewTLSServer(dLanding)
	t.Cleanup(d.Close)
	sMux := http.NewServeMux()
	sMux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, a.URL+"/here", http.StatusFound)
	})
	sMux.HandleFunc("/across", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, d.URL+"/landing", http.StatusFound)
	})
	s := httptest.NewTLSServer(sMux)
	t.Cleanup(s.Close)
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate()) // httptest servers share one certificate

	e := newFetch(t, Options{
		Client:  NewClient(ClientOptions{TLS: &tls.Config{RootCAs: roots}}),
		Headers: []string{"X-Api-Key: hdr-key-31337"},
	})
	query := "?api_key=" + key + "&sig=" + sig
	tests := []struct {
		name, item  string
		at          *reqRecorder
		wantReferer string
		wantKey     bool // X-Api-Key still sent
	}{
		{"cross-origin", a.URL + "/cross" + query, bLanding, a.URL + "/", false},
		{"same origin", "http://ann:pw-5150@" + strings.TrimPrefix(a.URL, "http://") + "/same" + query + "#frag",
			aHere, a.URL + "/same" + query, true},
		{"https to http", s.URL + "/down" + query, aHere, "", false},
		{"https to another https origin", s.URL + "/across" + query, dLanding, s.URL + "/", false},
	}
	for _, tt := range tests {
		res := fetchOne(t, e, tt.item)
		if !res.OK() {
			t.Errorf("%s: %s, want success", tt.name, res.Status())
			continue
		}
		got := tt.at.last(t)
		if ref := got.header.Get("Referer"); ref != tt.wantReferer {
			t.Errorf("%s: Referer %q, want %q", tt.name, ref, tt.wantReferer)
		}
		if v := got.header.Get("X-Api-Key"); (v != "") != tt.wantKey {
			t.Errorf("%s: X-Api-Key %q, want it sent: %v", tt.name, v, tt.wantKey)
		}
		if !tt.wantKey {
			if leak := got.holds(key, sig, "hdr-key-31337"); leak != "" {
				t.Errorf("%s: the redirect's request (%s %s) carries %q", tt.name, got.method, got.uri, leak)
			}
		}
		if leak := got.holds("pw-5150", "frag"); leak != "" {
			t.Errorf("%s: the redirect's request carries %q", tt.name, leak)
		}
	}
}

func TestFetchHTTP2AndTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(&reqRecorder{})
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted handshake's complaint
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	e := newFetch(t, Options{Client: NewClient(ClientOptions{Conns: 4, TLS: &tls.Config{RootCAs: roots}})})
	if res := fetchOne(t, e, srv.URL+"/h2"); !res.OK() || res.HTTP.Proto != "HTTP/2.0" {
		t.Errorf("TLS with ALPN: %s over %q, want success over HTTP/2.0", res.Status(), res.HTTP.Proto)
	}

	e = newFetch(t, Options{})
	res := fetchOne(t, e, srv.URL+"/untrusted")
	if res.OK() || !errors.Is(res.Err, runner.ErrPermanent) || !strings.Contains(res.Err.Error(), "certificate") || res.HTTP.Conn != "tls" {
		t.Errorf("untrusted certificate: %v, Conn %q; want a permanent certificate error, tls", res.Err, res.HTTP.Conn)
	}
	e = newFetch(t, Options{Client: NewClient(ClientOptions{Insecure: true})})
	if res := fetchOne(t, e, srv.URL+"/insecure"); !res.OK() {
		t.Errorf("Insecure: %s, want success", res.Status())
	}
}

// TestFetchConnectionCauses: when no response comes, HTTPInfo.Conn says
// why, the attempt may be retried, and Sent is zero if nothing left.
func TestFetchConnectionCauses(t *testing.T) {
	plain := serve(t, &reqRecorder{})
	hang := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	ss, err := strictserver.New(strictserver.Options{ResetFirst: 1})
	if err != nil {
		t.Fatal(err)
	}
	reset := serve(t, ss)

	// A resolver that cannot reach any name server: lookups fail with a
	// *net.DNSError and never touch the network.
	noDNS := NewClient(ClientOptions{})
	tr := noDNS.Transport.(*direct.Transport)
	tr.Proxy = nil
	tr.DialContext = (&net.Dialer{Resolver: &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("no name server in this test")
		},
	}}).DialContext

	tests := []struct {
		name, url string
		opts      Options
		want      string
		wantSent  bool
	}{
		{"refused", "http://" + closedPort(t) + "/x", Options{}, "refused", false},
		{"reset", reset.URL + "/x", Options{}, "reset", true},
		{"dns", "http://pace-test.invalid/x", Options{Client: noDNS}, "dns", false},
		{"tls", strings.Replace(plain.URL, "http:", "https:", 1) + "/x", Options{}, "tls", false},
		{"timeout", hang.URL + "/x", Options{Timeout: 50 * time.Millisecond}, "timeout", true},
	}
	for _, tt := range tests {
		e := newFetch(t, tt.opts)
		res := fetchOne(t, e, tt.url)
		if res.OK() || res.HTTP.Conn != tt.want || res.HTTP.StatusCode != 0 || res.ExitCode != -1 {
			t.Errorf("%s: %s, Conn %q, status %d, exit %d; want a failure, Conn %q, no status, exit -1",
				tt.name, res.Status(), res.HTTP.Conn, res.HTTP.StatusCode, res.ExitCode, tt.want)
		}
		if got := !res.Sent.IsZero(); got != tt.wantSent {
			t.Errorf("%s: Sent %v, want set: %v", tt.name, res.Sent, tt.wantSent)
		}
		if tt.name != "tls" && errors.Is(res.Err, runner.ErrPermanent) {
			t.Errorf("%s: %v is permanent, want it retried", tt.name, res.Err)
		}
	}
}
