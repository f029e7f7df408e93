package proxy

import (
	"net"
	"net/url"
	"testing"
)

// An upstream that is the proxy itself would have each request sent back
// to the proxy, admitted again, without end; another port or address is
// another server.
func TestLoopsBack(t *testing.T) {
	for _, tt := range []struct {
		upstream, listen string
		want             bool
	}{
		{"http://127.0.0.1:8080", "127.0.0.1:8080", true},
		{"http://127.0.0.1:8080/v1?k=v", "127.0.0.1:8080", true},
		{"http://localhost:8080", "127.0.0.1:8080", true},
		{"http://localhost:8080", "[::1]:8080", true},
		{"http://[::1]:8080", "[::1]:8080", true},
		{"http://127.0.0.1:8080", "0.0.0.0:8080", true}, // every address: loopback's too
		{"http://127.0.0.2:8080", "[::]:8080", true},
		{"http://192.0.2.7:8080", "192.0.2.7:8080", true},
		{"http://localhost", "127.0.0.1:80", true}, // the scheme's port
		{"https://localhost", "127.0.0.1:443", true},
		// Another server.
		{"http://127.0.0.1:8081", "127.0.0.1:8080", false},
		{"http://127.0.0.2:8080", "127.0.0.1:8080", false},
		{"http://192.0.2.7:8080", "127.0.0.1:8080", false},
		{"http://api.example.com:8080", "0.0.0.0:8080", false},
		{"https://localhost", "127.0.0.1:80", false},
		{"http://localhost:8080", "127.0.0.2:8080", false},
	} {
		u, err := url.Parse(tt.upstream)
		if err != nil {
			t.Fatal(err)
		}
		addr, err := net.ResolveTCPAddr("tcp", tt.listen)
		if err != nil {
			t.Fatal(err)
		}
		if got := LoopsBack(u, addr); got != tt.want {
			t.Errorf("LoopsBack(%s, %s) = %v, want %v", tt.upstream, tt.listen, got, tt.want)
		}
	}
}
