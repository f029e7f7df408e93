package direct

import (
	"bytes"
	"net/http"
	"net/url"
	"testing"
)

// appendHead writes what Request.Write writes, for every request it
// takes, and takes the common ones.
func TestAppendHeadAsRequestWrite(t *testing.T) {
	for _, c := range []struct {
		method, url string
		header      http.Header
		host        string
		want        bool // taken by appendHead
	}{
		{"GET", "http://up.test/x?q=1", nil, "", true},
		{"GET", "http://up.test", nil, "", true},
		{"GET", "http://up.test/", http.Header{"User-Agent": {"pace/1"}, "X-Token": {"a", "b"}, "Accept": {"*/*"}}, "", true},
		{"HEAD", "http://127.0.0.1:8080/a%20b/c%2Fd?x=%41&y", http.Header{"User-Agent": {""}}, "", true},
		{"OPTIONS", "http://up.test/x?", http.Header{"User-Agent": nil}, "", true},
		{"TRACE", "http://[::1]:80/x", http.Header{"X-Multi": {" spaced \t", "line\r\nbreak", ""}}, "", true},
		{"GET", "http://up.test/x", http.Header{"Host": {"ignored"}, "Content-Length": {"5"}, "Transfer-Encoding": {"chunked"},
			"Trailer": {"X"}, "bad name": {"dropped"}, "User-Agent": {" ua\nwith break "}}, "other.test:81", true},
		{"GET", "http://up.test/päth", nil, "", true},
		{"GET", "http://up_test.x/x", nil, "", true},
		{"GET", "http://bücher.test/x", nil, "", false}, // punycode
		{"GET", "http://[fe80::1%25eth0]:80/x", nil, "", false},
		{"GET", "http://up.test/x", nil, "bad host/", false},
		{"POST", "http://up.test/x", nil, "", false},
		{"DELETE", "http://up.test/x", nil, "", false},
		{"GET", "http://up.test/x", http.Header{"Connection": {"close"}}, "", true},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		req := &http.Request{Method: c.method, URL: u, Header: c.header, Host: c.host}
		if req.Header == nil {
			req.Header = http.Header{}
		}
		var keys []string
		got, ok := appendHead(nil, &keys, req, nil)
		if ok != c.want {
			t.Errorf("%s %s %v: taken %v, want %v", c.method, c.url, c.header, ok, c.want)
		}
		if !ok {
			continue
		}
		var want bytes.Buffer
		if err := req.Write(&want); err != nil {
			t.Errorf("%s %s: Request.Write: %v", c.method, c.url, err)
			continue
		}
		if string(got) != want.String() {
			t.Errorf("%s %s %v:\nappendHead    %q\nRequest.Write %q", c.method, c.url, c.header, got, want.String())
		}
	}
}

// FuzzAppendHead: for any request appendHead takes, Request.Write writes
// the same bytes.
func FuzzAppendHead(f *testing.F) {
	f.Add("GET", "/x", "q=1", "up.test", "X-A", "v", "pace/1")
	f.Add("HEAD", "/a b", "", "[::1]:80", "bad name", "v\r\n", "")
	f.Fuzz(func(t *testing.T, method, path, query, host, k, v, ua string) {
		req := &http.Request{Method: method, URL: &url.URL{Scheme: "http", Host: host, Path: path, RawQuery: query},
			Header: http.Header{k: {v}}}
		if ua != "" {
			req.Header["User-Agent"] = []string{ua}
		}
		var keys []string
		got, ok := appendHead(nil, &keys, req, nil)
		if !ok {
			return
		}
		var want bytes.Buffer
		if err := req.Write(&want); err != nil {
			t.Fatalf("appendHead took %q, which Request.Write refuses: %v", got, err)
		}
		if string(got) != want.String() {
			t.Errorf("appendHead    %q\nRequest.Write %q", got, want.String())
		}
	})
}
