package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestToProxy(t *testing.T) {
	for _, tt := range []struct {
		upstream, ref, want string // want "" for no rewrite
	}{
		{"https://api.example.com/v1/", "https://api.example.com/v1/items?page=2#f", "http://127.0.0.1:8080/items?page=2#f"},
		{"https://api.example.com/v1/", "HTTPS://API.EXAMPLE.COM:443/v1/items", "http://127.0.0.1:8080/items"},
		{"https://api.example.com/v1", "https://api.example.com/v1/a%2Fb", "http://127.0.0.1:8080/a%2Fb"},
		{"https://api.example.com/v1/", "/v1/items", "http://127.0.0.1:8080/items"},
		{"https://api.example.com", "https://api.example.com", "http://127.0.0.1:8080/"},
		{"https://api.example.com", "https://api.example.com/repos/x/issues?page=3", "http://127.0.0.1:8080/repos/x/issues?page=3"},
		{"https://api.example.com/?key=k", "https://api.example.com/x?key=k&page=2", "http://127.0.0.1:8080/x?page=2"},
		{"https://api.example.com/?key=k", "https://api.example.com/x?key=k", "http://127.0.0.1:8080/x"},
		{"http://127.0.0.1:9000/", "http://127.0.0.1:9000/x", "http://127.0.0.1:8080/x"},
		// Not the upstream's, or already through the proxy.
		{"https://api.example.com", "/items", ""},                           // the proxy's path is the upstream's
		{"https://api.example.com/v1/", "/v2/items", ""},                    // outside the upstream's path
		{"https://api.example.com/v1/", "https://api.example.com/v10/", ""}, // not at a slash
		{"https://api.example.com/v1/", "https://api.example.com/v1", ""},   // the proxy would send /v1/
		{"https://api.example.com/v1/", "http://api.example.com/v1/x", ""},  // another scheme
		{"https://api.example.com/v1/", "https://api.example.com:8443/v1/x", ""},
		{"https://api.example.com/v1/", "https://cdn.example.com/v1/x", ""},
		{"https://api.example.com/v1/", "https://u:p@api.example.com/v1/x", ""},
		{"https://api.example.com/v1/", "//api.example.com/v1/x", ""},
		{"https://api.example.com/v1/", "items", ""},
		{"https://api.example.com/v1/", "", ""},
		{"https://api.example.com/v1/", "mailto:a@example.com", ""},
		{"https://api.example.com/v1/", "https://api.example.com/v1/%zz", ""},
	} {
		up, _ := url.Parse(tt.upstream)
		p := &Proxy{opts: Options{Upstream: up}}
		got, ok := p.toProxy(tt.ref, "127.0.0.1:8080")
		if !ok {
			got = ""
		}
		if got != tt.want {
			t.Errorf("upstream %s: %q -> %q, want %q", tt.upstream, tt.ref, got, tt.want)
		}
	}
}

func TestRewriteLinks(t *testing.T) {
	up, _ := url.Parse("https://api.github.com")
	p := &Proxy{opts: Options{Upstream: up}}
	shared := []string{"https://api.github.com/x"}
	h := http.Header{
		"Location": shared,
		"Link": {`<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last"`,
			`<https://docs.github.com/x>; rel="help"; title="a <https://api.github.com/y> b, \"<q>\""`},
		"Content-Location": {"https://other.example/x"},
	}
	p.toClient(h, "localhost:1234")
	want := http.Header{
		"Location": {"http://localhost:1234/x"},
		"Link": {`<http://localhost:1234/repositories/1/issues?page=2>; rel="next", <http://localhost:1234/repositories/1/issues?page=5>; rel="last"`,
			`<https://docs.github.com/x>; rel="help"; title="a <https://api.github.com/y> b, \"<q>\""`},
		"Content-Location": {"https://other.example/x"},
	}
	for k := range want {
		if strings.Join(h[k], "|") != strings.Join(want[k], "|") {
			t.Errorf("%s = %q, want %q", k, h[k], want[k])
		}
	}
	if shared[0] != "https://api.github.com/x" {
		t.Errorf("the header's slice was changed in place: %q", shared)
	}
	for _, v := range []string{`<https://api.github.com/x`, `<>`, `"unterminated`, `\`, `<https://api.github.com/x>; rel="next"; a="\`} {
		h := http.Header{"Link": {v}}
		p.toClient(h, "h")
		if strings.Contains(v, "api.github.com/x>") != strings.Contains(h["Link"][0], "h/x>") {
			t.Errorf("Link %q -> %q", v, h["Link"][0])
		}
	}
}

// Through the proxy, a client follows the upstream's redirects, created
// resources and next pages through the proxy again, each request
// admitted: before, an absolute Location or Link to the upstream sent
// the client straight there, a call over the rules that pace never saw.
func TestUpstreamLinksLeadThroughTheProxy(t *testing.T) {
	var upURL string
	var seen atomic.Int64
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		switch r.URL.Path {
		case "/v1/old":
			w.Header().Set("Location", upURL+"/v1/new")
			w.WriteHeader(http.StatusFound)
		case "/v1/rel":
			w.Header().Set("Location", "/v1/new")
			w.WriteHeader(http.StatusMovedPermanently)
		case "/v1/items":
			w.Header().Set("Location", upURL+"/v1/items/7")
			w.WriteHeader(http.StatusCreated)
		case "/v1/new":
			w.Header().Set("Link", "<"+upURL+"/v1/new?page=2>; rel=\"next\"")
			io.WriteString(w, "new")
		}
	})
	upURL = up.URL
	tp := startProxy(t, up.URL+"/v1/", "", 0, nil)
	for _, path := range []string{"/old", "/rel"} {
		if code, body := tp.get(t, path); code != 200 || body != "new" {
			t.Errorf("GET %s through the proxy: %d %q, want 200 \"new\", by way of the redirect", path, code, body)
		}
	}
	if n := tp.p.Stats().Requests; n != 4 || seen.Load() != 4 {
		t.Errorf("the proxy got %d requests, the upstream %d; want 4 and 4: each redirect followed through the proxy", n, seen.Load())
	}
	host := strings.TrimPrefix(tp.url, "http://")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(tp.url + "/new")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.Header.Get("Link"), "<http://"+host+"/new?page=2>; rel=\"next\""; got != want {
		t.Errorf("Link = %q, want %q", got, want)
	}
	// An HTTP/1.0 request without a Host: the address it connected to.
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /old HTTP/1.0\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	} else if got, want := resp.Header.Get("Location"), "http://"+host+"/new"; got != want {
		t.Errorf("HTTP/1.0 without Host: Location %q, want %q", got, want)
	}
	// A POST (ReverseProxy's path, not the bodiless one).
	resp, err = noFollow.Post(tp.url+"/items", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.Header.Get("Location"), "http://"+host+"/items/7"; resp.StatusCode != 201 || got != want {
		t.Errorf("POST /items: %d, Location %q; want 201, %q", resp.StatusCode, got, want)
	}
}

// The upstream's headers are untrusted: rewriting never panics, leaves a
// value that names no URL of the upstream as it is, and never turns one
// link into a link to anywhere but the proxy.
func FuzzRewriteLinks(f *testing.F) {
	for _, s := range []string{
		`<https://api.example.com/v1/x?page=2>; rel="next"`,
		`<https://api.example.com/v1/x>; title="<a>\"b", <https://api.example.com/v1/y>`,
		`https://api.example.com/v1/x`, `/v1/x`, `<`, `"`, `\`, `<>`, "",
	} {
		f.Add(s)
	}
	up, _ := url.Parse("https://api.example.com/v1/?k=1")
	p := &Proxy{opts: Options{Upstream: up}}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Link": {v}, "Location": {v}}
		p.toClient(h, "proxy.test:1")
		for k, got := range h {
			if !strings.Contains(v, "api.example.com") && !strings.Contains(v, "/v1") && got[0] != v {
				t.Errorf("%s %q rewritten to %q, naming no upstream URL", k, v, got[0])
			}
			if got[0] != v && !strings.Contains(got[0], "http://proxy.test:1/") {
				t.Errorf("%s %q rewritten to %q, no link to the proxy", k, v, got[0])
			}
		}
	})
}

func TestClientCookie(t *testing.T) {
	for _, tt := range []struct {
		upstream, cookie, want string // want "" for unchanged
	}{
		{"https://api.example.com/v1/", "sid=abc; Domain=api.example.com; Path=/v1/app; Secure; HttpOnly; SameSite=Lax", "sid=abc; Path=/app; HttpOnly; SameSite=Lax"},
		{"https://api.example.com/v1/", "sid=abc; domain=.EXAMPLE.com; path=/v1; secure", "sid=abc; Path=/"},
		{"https://api.example.com/v1/", "sid=abc; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT", ""},
		{"https://api.example.com/v1/", "sid=abc; Path=/v10", ""},
		{"https://api.example.com", "sid=abc; Path=/app; Secure", "sid=abc; Path=/app"},
		{"https://api.example.com", "sid=abc", ""},
		{"https://api.example.com", "sid=abc; Domain=other.example; Secure", ""},        // another domain's
		{"https://api.example.com", "sid=abc; Domain=ample.com; Secure", ""},            // not a parent of the host
		{"https://api.example.com", "__Host-sid=abc; Secure; Path=/", ""},               // HTTPS only, by its name
		{"https://api.example.com", "__Secure-sid=abc; Domain=example.com; Secure", ""}, // the same
		{"https://api.example.com", "", ""},
		{"https://api.example.com", ";;;", ""},
	} {
		up, _ := url.Parse(tt.upstream)
		p := &Proxy{opts: Options{Upstream: up}}
		want := tt.want
		if want == "" {
			want = tt.cookie
		}
		if got := p.clientCookie(tt.cookie); got != want {
			t.Errorf("upstream %s: %q -> %q, want %q", tt.upstream, tt.cookie, got, want)
		}
	}
}

// A session cookie set by the upstream through the proxy is sent back by
// the client through the proxy: before, its Domain (the upstream's) and
// Secure made the client drop it or keep it to itself, and every request
// after the login failed.
func TestUpstreamCookieComesBack(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/login":
			w.Header().Add("Set-Cookie", "sid=s3; Domain="+r.Host[:strings.LastIndexByte(r.Host, ':')]+"; Path=/v1; Secure; HttpOnly")
		case "/v1/me":
			if c, err := r.Cookie("sid"); err != nil || c.Value != "s3" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			io.WriteString(w, "me")
		}
	})
	tp := startProxy(t, up.URL+"/v1/", "", 0, nil)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	for _, path := range []string{"/login", "/me"} {
		resp, err := c.Get(tp.url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %q; want 200 (the session cookie sent back)", path, resp.StatusCode, b)
		}
	}
}

// Set-Cookie values are the upstream's, untrusted: rewriting never panics
// and keeps the cookie's name and value as they were.
func FuzzClientCookie(f *testing.F) {
	for _, s := range []string{"sid=abc; Domain=api.example.com; Path=/v1/x; Secure", "a=b; path=/v1", "=;;domain=.com", ""} {
		f.Add(s)
	}
	up, _ := url.Parse("https://api.example.com/v1/")
	p := &Proxy{opts: Options{Upstream: up}}
	f.Fuzz(func(t *testing.T, v string) {
		got := p.clientCookie(v)
		first, _, _ := strings.Cut(v, ";")
		if !strings.HasPrefix(got, first) {
			t.Errorf("%q -> %q: the name and value changed", v, got)
		}
	})
}
