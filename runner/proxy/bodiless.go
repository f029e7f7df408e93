package proxy

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"sync"
)

// A bodiless request (most of a proxy's: GETs) takes a path of its own
// rather than httputil.ReverseProxy's: the same steps, in the same order,
// without what only other requests need (a body's wrapper, an upgrade's
// checks) and with fewer copies and allocations (ReverseProxy copies the
// request twice and parses the answer's Content-Type). Every other
// request, and any whose query ReverseProxy would re-encode, goes
// through ReverseProxy. TestBodilessPathAsReverseProxy holds the two to
// the same requests upstream and answers downstream.

// bodiless reports whether r takes the bodiless path.
func (p *Proxy) bodiless(r *http.Request) bool {
	if r.ContentLength != 0 || (r.Body != nil && r.Body != http.NoBody) || len(r.TransferEncoding) > 0 ||
		r.Header["Upgrade"] != nil || p.reencodeQueries || p.noBodiless {
		return false
	}
	for _, v := range r.Header["Connection"] {
		if hasToken(v, "upgrade") {
			return false
		}
	}
	return cleanQuery(r.URL.RawQuery)
}

// reencodesQueries reports whether GODEBUG makes ReverseProxy re-encode
// every query (urlmaxqueryparams set): then every request takes it.
func reencodesQueries() bool {
	return strings.Contains(os.Getenv("GODEBUG"), "urlmaxqueryparams")
}

// cleanQuery reports whether ReverseProxy sends the query q as it is:
// no ';', every '%' escaping a byte, at most 10,000 parameters (its
// cleanQueryParams).
func cleanQuery(q string) bool {
	if strings.Count(q, "&") >= 10000 {
		return false
	}
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return false
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// hasToken reports whether the list v holds token, in any case.
func hasToken(v, token string) bool {
	for f := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(textproto.TrimString(f), token) {
			return true
		}
	}
	return false
}

// hopHeaders are the hop-by-hop headers ReverseProxy removes both ways
// (RFC 9110, 7.6.1, and RFC 2616's list).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopByHopHeaders removes from h the headers its Connection names
// and hopHeaders, as ReverseProxy does.
func removeHopByHopHeaders(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, f := range hopHeaders {
		delete(h, f)
	}
}

// emptyUserAgent is the User-Agent of a request without one: none sent,
// rather than Go's (never written to).
var emptyUserAgent = []string{""}

// bodilessState is what the bodiless path keeps of a request beside its
// request (allocated with it).
type bodilessState struct {
	rw    http.ResponseWriter
	trace httptrace.ClientTrace
	mu    sync.Mutex
	done  bool // RoundTrip has returned: no 1xx answer goes to rw any more
	url   url.URL
}

// got1xx sends a 1xx answer to the client as it comes, as ReverseProxy
// does, but not once RoundTrip has returned.
func (b *bodilessState) got1xx(code int, header textproto.MIMEHeader) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil
	}
	h := b.rw.Header()
	copyHeader(h, http.Header(header))
	b.rw.WriteHeader(code)
	clear(h)
	return nil
}

// serveBodiless is ReverseProxy.ServeHTTP for a request that bodiless
// accepted, ctx being the request's and rq what the proxy knows of it.
func (p *Proxy) serveBodiless(rw http.ResponseWriter, req *http.Request, ctx context.Context, rq *request) {
	b := &rq.bodiless
	b.rw = rw
	b.trace.Got1xxResponse = b.got1xx
	out := req.WithContext(httptrace.WithClientTrace(ctx, &b.trace))
	out.Body, out.ContentLength, out.Close = nil, 0, false
	h := req.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	removeHopByHopHeaders(h)
	for _, v := range req.Header["Te"] {
		if hasToken(v, "trailers") {
			h["Te"] = []string{"trailers"}
			break
		}
	}
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		delete(h, k)
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = emptyUserAgent
	}
	out.Header = h
	u := &b.url
	*u = *req.URL
	up := p.opts.Upstream
	u.Scheme, u.Host, u.User = up.Scheme, up.Host, nil // user information: see New's Rewrite
	u.Path, u.RawPath = joinURLPath(up, req.URL)
	if up.RawQuery == "" || u.RawQuery == "" {
		u.RawQuery = up.RawQuery + u.RawQuery
	} else {
		u.RawQuery = up.RawQuery + "&" + u.RawQuery
	}
	out.URL, out.Host = u, ""
	res, err := slotTransport{p}.RoundTrip(out)
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	if err != nil {
		p.fail(rw, out, err)
		return
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		// Not asked for: 502 (ReverseProxy's words), its connection
		// closed by ServeHTTP. (ReverseProxy would switch if the answer
		// named no protocol either; the direct path refuses such an
		// answer before.)
		p.answered(res)
		p.fail(rw, out, fmt.Errorf("backend tried to switch protocol %q when %q was requested", res.Header.Get("Upgrade"), ""))
		return
	}
	removeHopByHopHeaders(res.Header)
	p.answered(res)
	p.toClient(res.Header, rq.host)
	copyHeader(rw.Header(), res.Header)
	noSniff(rw.Header(), res.Header)
	announced := len(res.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		rw.Header().Add("Trailer", strings.Join(keys, ", "))
	}
	rw.WriteHeader(res.StatusCode)
	if err := p.copyBody(rw, res); err != nil {
		res.Body.Close()
		panic(http.ErrAbortHandler) // the answer cut off: the server closes the connection
	}
	// The answer is whole: sent before it is reported (slotBody.Close),
	// rather than once the handler has returned. Its bytes are the same:
	// a body of unknown length was flushed at each write already.
	http.NewResponseController(rw).Flush()
	res.Body.Close()
	if len(res.Trailer) > 0 {
		http.NewResponseController(rw).Flush() // chunked, for the trailers
	}
	if len(res.Trailer) == announced {
		copyHeader(rw.Header(), res.Trailer)
		return
	}
	for k, vv := range res.Trailer {
		for _, v := range vv {
			rw.Header().Add(http.TrailerPrefix+k, v)
		}
	}
}

// copyHeader adds src's fields to dst, as ReverseProxy does, but for a
// field dst does not have yet: that takes src's values as they are
// (neither is changed once the answer's head is written, and a value
// added to dst later goes to a slice of its own: its capacity is its length).
func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		ck := http.CanonicalHeaderKey(k)
		if _, ok := dst[ck]; !ok && len(vv) > 0 {
			dst[ck] = vv[:len(vv):len(vv)]
			continue
		}
		for _, v := range vv {
			dst.Add(k, v)
		}
	}
}

// noSniff keeps the server from sniffing a Content-Type for an answer
// whose upstream sent none, dst being the client's header and src the
// upstream's: a nil value is a field the server sends no line for, and
// adds none to (net/http's and leanhttp's servers alike). The answer goes
// to the client as it is; a type guessed from its first bytes (an HTML
// error page, a JSON body taken for text/plain) would be the proxy's
// word, not the upstream's.
func noSniff(dst, src http.Header) {
	if _, ok := src["Content-Type"]; !ok {
		dst["Content-Type"] = nil
	}
}

// copyBody copies res's body to rw, flushing each write for an event
// stream or a body of unknown length (and the head at once), as
// ReverseProxy does with a FlushInterval of 0.
func (p *Proxy) copyBody(rw http.ResponseWriter, res *http.Response) error {
	flush := res.ContentLength == -1 || eventStream(res.Header.Get("Content-Type"))
	var fl func() error
	if flush {
		fl = http.NewResponseController(rw).Flush
		fl()
	}
	buf := p.buffers.Get()
	defer p.buffers.Put(buf)
	for {
		n, rerr := res.Body.Read(buf)
		if n > 0 {
			if _, werr := rw.Write(buf[:n]); werr != nil {
				return werr
			}
			if flush {
				fl()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// eventStream reports whether ct is text/event-stream, as ReverseProxy
// reads it (mime.ParseMediaType, only for a type that may be one).
func eventStream(ct string) bool {
	if len(ct) < len("text/event-stream") || !strings.Contains(strings.ToLower(ct), "event-stream") {
		return false
	}
	base, _, _ := mime.ParseMediaType(ct)
	return base == "text/event-stream"
}

// joinURLPath joins the upstream's path and the request's, as
// ReverseProxy does (one slash between them).
func joinURLPath(a, b *url.URL) (path, rawpath string) {
	if a.RawPath == "" && b.RawPath == "" {
		return singleJoiningSlash(a.Path, b.Path), ""
	}
	apath, bpath := a.EscapedPath(), b.EscapedPath()
	aslash, bslash := strings.HasSuffix(apath, "/"), strings.HasPrefix(bpath, "/")
	switch {
	case aslash && bslash:
		return a.Path + b.Path[1:], apath + bpath[1:]
	case !aslash && !bslash:
		return a.Path + "/" + b.Path, apath + "/" + bpath
	}
	return a.Path + b.Path, apath + bpath
}

func singleJoiningSlash(a, b string) string {
	aslash, bslash := strings.HasSuffix(a, "/"), strings.HasPrefix(b, "/")
	switch {
	case aslash && bslash:
		return a + b[1:]
	case !aslash && !bslash:
		return a + "/" + b
	}
	return a + b
}
