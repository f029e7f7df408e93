package leanhttp

import (
	"errors"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
)

// preSize is how much of a body is held before it goes to the
// connection, as net/http's server holds it: a handler that returns
// within it has its answer sent with a Content-Length.
const preSize = 2048

// response is the http.ResponseWriter of one request served by the
// loop. It writes what net/http's server writes for the same calls, the
// same way: the body through a buffer of preSize (c.ww) to a chunkWriter
// that writes the head on its first call.
type response struct {
	c      *conn
	req    *http.Request
	header http.Header

	wroteHeader bool // a final status set
	committed   bool // the head is in c.bw
	done        bool // the handler returned
	status      int

	// Set by WriteHeader, from the header as it was then.
	isHEAD        bool
	bodyAllowed   bool   // not 1xx, 204 or 304
	te            string // Transfer-Encoding set by the handler
	contentLength int64  // declared; -1: none
	noAutoLength  bool   // a Content-Length may not be added at the end
	sniff         bool   // a Content-Type may be sniffed from the body
	addDate       bool
	closeConn     bool // add Connection: close
	wantsClose    bool // the request asked to close
	closeAfter    bool
	chunking      bool
	trailers      []string // declared

	written int64
}

var (
	errDone = errors.New("leanhttp: write after the handler returned")
	crlf    = []byte("\r\n")
)

func (w *response) Header() http.Header { return w.header }

// WriteHeader sends a 1xx answer at once, or sets the status of the
// final one, whose head is written with the body's first bytes (or when
// the handler returns, or flushes).
func (w *response) WriteHeader(code int) {
	if w.wroteHeader || w.done {
		w.c.s.logf("http: superfluous response.WriteHeader call")
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code)) // as net/http does
	}
	c := w.c
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		c.bw.Write(statusLine(c.scratch[:0], code))
		c.hdr = c.writeHeader(c.hdr[:0], w.header, exclCL|exclTE)
		c.bw.Write(c.hdr)
		c.bw.Write(crlf)
		c.bw.Flush()
		return
	}
	w.wroteHeader = true
	w.status = code
	h := w.header
	var excl exclusion
	trailers := false
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			trailers = true
		}
	}
	w.trailers = w.trailers[:0]
	for _, v := range h["Trailer"] {
		trailers = true
		foreachHeaderElement(v, func(k string) {
			if k = http.CanonicalHeaderKey(k); validTrailer(k) {
				w.trailers = append(w.trailers, k)
			}
		})
	}
	if cl := get(h, "Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.contentLength = v
		} else {
			// Left out of a chunked answer's head; written as it is in
			// others, as net/http does.
			c.s.logf("http: invalid Content-Length of %q", cl)
		}
	}
	w.te = get(h, "Transfer-Encoding")
	hasTE := w.te != ""
	w.isHEAD = w.req.Method == http.MethodHead
	w.bodyAllowed = bodyAllowedForStatus(code)
	_, hasCLHeader := h["Content-Length"]
	w.noAutoLength = trailers || hasTE || !w.bodyAllowed || hasCLHeader
	shutting := c.s.shutting.Load()
	w.closeAfter = w.wantsClose || get(h, "Connection") == "close" || shutting
	if w.bodyAllowed {
		_, haveType := h["Content-Type"]
		w.sniff = !haveType && get(h, "Content-Encoding") == "" && !hasTE
	} else {
		excl |= exclCL | exclTE
		if code == http.StatusNotModified {
			excl |= exclCT
		}
	}
	_, hasDate := h["Date"]
	w.addDate = !hasDate
	if w.contentLength != -1 && hasTE && w.te != "identity" {
		c.s.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", w.te, w.contentLength)
		w.contentLength = -1
		excl |= exclCL
	}
	switch {
	case w.isHEAD || !w.bodyAllowed:
		excl |= exclTE
	case w.contentLength != -1:
		excl |= exclTE
	case hasTE && w.te == "identity":
		w.closeAfter = true
		excl |= exclTE
	default:
		// Chunked, unless the handler returns before its body
		// outgrows preSize (commit decides).
		if w.te == "chunked" {
			excl |= exclTE
		}
		excl |= exclCL
	}
	if w.closeAfter && (shutting || !hasToken(get(h, "Connection"), "close")) && !(code == http.StatusSwitchingProtocols && h["Upgrade"] != nil) {
		excl |= exclConnection
		w.closeConn = true
	}
	c.hdr = c.writeHeader(c.hdr[:0], h, excl)
}

// get is Header.Get for a canonical key.
func get(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Write writes p to the body, as net/http's server does.
func (w *response) Write(p []byte) (int, error) {
	if w.done {
		return 0, errDone
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !w.bodyAllowed {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	return w.c.ww.Write(p)
}

// Flush sends what has been written (http.Flusher).
func (w *response) Flush() { w.FlushError() }

// FlushError sends what has been written, and says whether it could
// (for http.ResponseController).
func (w *response) FlushError() error {
	if w.done {
		return errDone
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	err := w.c.ww.Flush()
	if !w.committed {
		w.commit(nil)
	}
	if err2 := w.c.bw.Flush(); err == nil {
		err = err2
	}
	return err
}

// finish ends the answer once the handler has returned: what is held,
// the head if not yet written, the last chunk and trailers, all sent.
func (w *response) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.done = true
	c := w.c
	c.ww.Flush()
	if !w.committed {
		w.commit(nil)
	}
	if w.chunking {
		c.bw.WriteString("0\r\n")
		if t := w.finalTrailers(); t != nil {
			t.Write(c.bw)
		}
		c.bw.Write(crlf)
	}
	c.bw.Flush()
}

// chunkWriter is what c.ww writes to: the head on its first write, then
// the body, in chunks if the answer is chunked, nothing for HEAD.
type chunkWriter struct{ w *response }

func (cw chunkWriter) Write(p []byte) (int, error) {
	w := cw.w
	if !w.committed {
		w.commit(p)
	}
	if w.isHEAD {
		return len(p), nil
	}
	c := w.c
	if w.chunking {
		c.bw.Write(strconv.AppendInt(c.scratch[:0], int64(len(p)), 16))
		c.bw.Write(crlf)
	}
	n, err := c.bw.Write(p)
	if w.chunking && err == nil {
		_, err = c.bw.Write(crlf)
	}
	if err != nil {
		c.rwc.Close()
	}
	return n, err
}

// commit writes the head, p being the first bytes of the body (for a
// sniffed Content-Type, and the Content-Length of a body that ends there
// once the handler is done).
func (w *response) commit(p []byte) {
	w.committed = true
	c := w.c
	bw := c.bw
	bw.Write(statusLine(c.scratch[:0], w.status))
	bw.Write(c.hdr)
	if w.addDate {
		bw.WriteString("Date: ")
		bw.Write(time.Now().UTC().AppendFormat(c.scratch[:0], http.TimeFormat))
		bw.Write(crlf)
	}
	if w.done && !w.noAutoLength && (!w.isHEAD || len(p) > 0) {
		w.contentLength = int64(len(p))
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(c.scratch[:0], int64(len(p)), 10))
		bw.Write(crlf)
	} else if !w.isHEAD && w.bodyAllowed && w.contentLength == -1 && w.te != "identity" {
		w.chunking = true
	}
	if w.sniff && len(p) > 0 {
		bw.WriteString("Content-Type: ")
		bw.WriteString(http.DetectContentType(p))
		bw.Write(crlf)
	}
	if w.closeConn {
		bw.WriteString("Connection: close\r\n")
	}
	if w.chunking {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.Write(crlf)
}

// reusable reports whether the connection may serve another request.
func (w *response) reusable() bool {
	if w.closeAfter || w.c.werr != nil {
		return false
	}
	return w.isHEAD || w.contentLength == -1 || !w.bodyAllowed || w.contentLength == w.written
}

// finalTrailers are the trailers to send: the declared ones' values and
// those set with http.TrailerPrefix.
func (w *response) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range w.header {
		if kk, found := strings.CutPrefix(k, http.TrailerPrefix); found {
			if t == nil {
				t = http.Header{}
			}
			t[kk] = vv
		}
	}
	for _, k := range w.trailers {
		if t == nil {
			t = http.Header{}
		}
		for _, v := range w.header[k] {
			t.Add(k, v)
		}
	}
	return t
}

// exclusion is the header fields the head leaves out of the handler's:
// the server sets them itself, or the answer may not have them.
type exclusion uint8

const (
	exclCL exclusion = 1 << iota
	exclTE
	exclCT
	exclConnection
)

func (e exclusion) has(k string) bool {
	switch k {
	case "Content-Length":
		return e&exclCL != 0
	case "Transfer-Encoding":
		return e&exclTE != 0
	case "Content-Type":
		return e&exclCT != 0
	case "Connection":
		return e&exclConnection != 0
	}
	return false
}

// writeHeader appends h's fields to b, as http.Header.Write writes them
// (sorted by name, invalid names dropped, line breaks in values made
// spaces), but for those excl leaves out.
func (c *conn) writeHeader(b []byte, h http.Header, excl exclusion) []byte {
	keys := c.keys[:0]
	for k := range h {
		if !excl.has(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !validName(k) {
			continue
		}
		for _, v := range h[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = appendValue(b, v)
			b = append(b, crlf...)
		}
	}
	clear(keys)
	c.keys = keys[:0]
	return b
}

// appendValue appends v with CR and LF made spaces, trimmed of spaces
// and tabs (http.Header.Write's way).
func appendValue(b []byte, v string) []byte {
	v = textproto.TrimString(v)
	start := len(b)
	b = append(b, v...)
	for i := start; i < len(b); i++ {
		if b[i] == '\r' || b[i] == '\n' {
			b[i] = ' '
		}
	}
	return b
}

// statusLine appends an HTTP/1.1 status line for code to b.
func statusLine(b []byte, code int) []byte {
	b = append(b, "HTTP/1.1 "...)
	if text := http.StatusText(code); text != "" {
		b = strconv.AppendInt(b, int64(code), 10)
		b = append(b, ' ')
		b = append(b, text...)
		return append(b, crlf...)
	}
	// As net/http writes an unknown code.
	if code < 100 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, " status code "...)
	b = strconv.AppendInt(b, int64(code), 10)
	return append(b, crlf...)
}

func bodyAllowedForStatus(code int) bool {
	return !(code >= 100 && code <= 199) && code != http.StatusNoContent && code != http.StatusNotModified
}

// foreachHeaderElement calls fn for each element of the list v (RFC 9110,
// 5.6.1), trimmed.
func foreachHeaderElement(v string, fn func(string)) {
	for f := range strings.SplitSeq(v, ",") {
		if f = textproto.TrimString(f); f != "" {
			fn(f)
		}
	}
}

// hasToken reports whether the list v holds token, in any case.
func hasToken(v, token string) bool {
	found := false
	foreachHeaderElement(v, func(f string) { found = found || strings.EqualFold(f, token) })
	return found
}

// validTrailer reports whether k may be a trailer (RFC 9110, 6.5.1), as
// net/http's server allows.
func validTrailer(k string) bool {
	switch k {
	case "Authorization", "Cache-Control", "Connection", "Content-Encoding", "Content-Length", "Content-Range",
		"Content-Type", "Expect", "Host", "Keep-Alive", "Max-Forwards", "Pragma", "Proxy-Authenticate",
		"Proxy-Authorization", "Proxy-Connection", "Range", "Realm", "Te", "Trailer", "Transfer-Encoding",
		"Www-Authenticate":
		return false
	}
	return true
}
