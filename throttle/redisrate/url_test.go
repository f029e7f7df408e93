package redisrate_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/tcptest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url     string
		addrs   []string
		user    string
		pass    string
		db      int
		tls     bool
		cluster bool
	}{
		{"redis://127.0.0.1:7000", []string{"127.0.0.1:7000"}, "", "", 0, false, false},
		{"redis://localhost", []string{"localhost:6379"}, "", "", 0, false, false},
		{"redis://:s3cret@h:1/2", []string{"h:1"}, "", "s3cret", 2, false, false},
		{"redis://bob:s3cret@h:1", []string{"h:1"}, "bob", "s3cret", 0, false, false},
		{"redis://bob:p%40ss@h:1", []string{"h:1"}, "bob", "p@ss", 0, false, false},
		{"rediss://h:6380", []string{"h:6380"}, "", "", 0, true, false},
		{"unix:///run/redis.sock?db=3", []string{"/run/redis.sock"}, "", "", 3, false, false},
		{"unix://u:pw@/run/redis.sock", []string{"/run/redis.sock"}, "u", "pw", 0, false, false},
		{"redis://a:1?addr=b:2&addr=c:3", []string{"a:1", "b:2", "c:3"}, "", "", 0, false, true},
		{"redis://a:1?cluster=true&dial_timeout=2s", []string{"a:1"}, "", "", 0, false, true},
		{"redis://a:1?cluster=false", []string{"a:1"}, "", "", 0, false, false},
	}
	for _, tt := range tests {
		o, err := redisrate.ParseURL(tt.url)
		if err != nil {
			t.Errorf("ParseURL(%q) = %v", tt.url, err)
			continue
		}
		if !slices.Equal(o.Addrs, tt.addrs) || o.Username != tt.user || o.Password != tt.pass ||
			o.DB != tt.db || (o.TLSConfig != nil) != tt.tls || o.IsClusterMode != tt.cluster {
			t.Errorf("ParseURL(%q) = addrs %q user %q pass %q db %d tls %v cluster %v, want %q %q %q %d %v %v",
				tt.url, o.Addrs, o.Username, o.Password, o.DB, o.TLSConfig != nil, o.IsClusterMode,
				tt.addrs, tt.user, tt.pass, tt.db, tt.tls, tt.cluster)
		}
		if !o.ContextTimeoutEnabled {
			t.Errorf("ParseURL(%q).ContextTimeoutEnabled = false, want calls bounded by their context", tt.url)
		}
	}
	if o, _ := redisrate.ParseURL("redis://a:1?dial_timeout=2s"); o == nil || o.DialTimeout != 2*time.Second {
		t.Errorf("dial_timeout=2s not applied: %+v", o)
	}

	for _, bad := range []string{
		"http://u:s3cret@h:1",
		"redis://u:s3cret@h:1/x",
		"redis://u:s3cret@h:1?bogus=1",
		"redis://u:s3cret@h:port",
		"redis://u:s3cret@h:1/2?cluster=true",
		"redis://u:s3cret@h:1?cluster=maybe",
		"unix://u:s3cret@/run/redis.sock?cluster=true",
		"unix://u:s3cret@",
		"redis://u:s3cret@[::1",
		"redis://u:s3cr/et@h:1",
		"redis://u:s3cret\x7f@h:1",
		"redis:u:s3cret@127.0.0.1:1/",  // no //: go-redis takes localhost:6379
		"redis:/u:s3cret@127.0.0.1:1/", // one /
		"redis://u:s3cret@/0",          // no host: localhost:6379 too
		"rediss://:s3cret@",
		"u:s3cret@h:1",
		"redis://:s3cret@127.0.0.1:65536",
		"redis://:s3cret@127.0.0.1:0",
		"redis://:s3cret@a:1?addr=b:99999",
	} {
		_, err := redisrate.ParseURL(bad)
		if err == nil {
			t.Errorf("ParseURL(%q) = nil error", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "s3cr/et") {
			t.Errorf("ParseURL(%q) error %q shows the password", bad, err)
		}
	}
}

func TestDialErrors(t *testing.T) {
	ctx := context.Background()
	rules := []throttle.Rule{{N: 1, Window: time.Second}}
	// Errors before any connection: the URL, the key, the rules.
	for _, tt := range []struct {
		url string
		o   redisrate.Options
	}{
		{"redis://u:s3cret@h:port", redisrate.Options{Rules: rules}},
		{"redis://default:s3cret#cdXX@127.0.0.1:1/0", redisrate.Options{Rules: rules}},
		{"redis://default:s3c/ret@127.0.0.1:1/0", redisrate.Options{Rules: rules}},
		{"redis://default:s3cret xx@127.0.0.1:1/0", redisrate.Options{Rules: rules}},
		{"redis://u:s3cret@127.0.0.1:1", redisrate.Options{Key: "a{b", Rules: rules}},
		{"redis://u:s3cret@127.0.0.1:1", redisrate.Options{Rules: []throttle.Rule{{N: 0, Window: time.Second}}}},
	} {
		l, err := redisrate.Dial(ctx, tt.url, tt.o)
		if err == nil {
			l.Close()
			t.Errorf("Dial(%q, %+v) = nil error", tt.url, tt.o)
			continue
		}
		if strings.Contains(err.Error(), "s3c") {
			t.Errorf("Dial(%q) error %q shows the password", tt.url, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://h:1", "redis://h:1"},
		{"redis://h:1/2?dial_timeout=3s", "redis://h:1/2?dial_timeout=3s"},
		// A user name alone may be a token.
		{"redis://bob@h:1", "redis://REDACTED@h:1"},
		{"redis://bob:s3cret@h:1/2", "redis://bob:REDACTED@h:1/2"},
		{"redis://:s3cret@h:1", "redis://:REDACTED@h:1"},
		{"rediss://bob:s3cret@h", "rediss://bob:REDACTED@h"},
		{"unix://u:s3cret@/run/redis.sock", "unix://u:REDACTED@/run/redis.sock"},
		{"redis://h:1/0?password=s3cret", "redis://h:1/0?password=REDACTED"},
		// URLs that do not parse.
		{"redis://u:s3c/ret@h:1", "redis://u:REDACTED@h:1"},
		{"redis://u:12#ret@h:1", "redis://u:REDACTED@h:1"},
		{"redis://u:s3cret\x7f@h:1", "redis://u:REDACTED@h:1"},
		{"redis://u:s3cret@[::1", "redis://u:REDACTED@[::1"},
		{"u:s3cret@h:1", "u:REDACTED@h:1"},
		{"redis://u:s3c ret@h:1/0", "redis://REDACTED@h:1/0"},
		{"redis://default:s3c\tr et#x@127.0.0.1:6390/0", "redis://REDACTED@127.0.0.1:6390/0"},
		// Free text.
		{`dial "redis://u:s3cret@h:1": connection refused`, `dial "redis://u:REDACTED@h:1": connection refused`},
		{"connect: connection refused", "connect: connection refused"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := redisrate.RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDialCancelledWhileRedisIsSilent: a Dial waiting on a Redis that
// accepts connections and never answers returns as soon as its context is
// cancelled (Ctrl-C at pace's start), not once go-redis's read timeout
// (here 20 s) has run out: go-redis heeds a context's deadline, not its
// cancellation.
func TestDialCancelledWhileRedisIsSilent(t *testing.T) {
	t.Parallel()
	addr := tcptest.Serve(t, func(net.Conn) { <-t.Context().Done() }) // read nothing, answer nothing
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	l, err := redisrate.Dial(ctx, "redis://"+addr+"?read_timeout=20s&dial_timeout=20s",
		redisrate.Options{Rules: []throttle.Rule{{N: 1, Window: time.Second}}, Timeout: time.Minute})
	if err == nil {
		l.Close()
		t.Fatal("Dial to a Redis that never answers succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Dial returned %v after its context was cancelled at 300ms (%v), want at once", d, err)
	}
}

// A URL go-redis cannot read is explained in the user's terms: what is
// expected, without go-redis's "redis:" prefix ("redis: invalid URL
// scheme: http" said neither which schemes work nor that Sentinel does
// not).
func TestParseURLSaysWhatIsExpected(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"http://u:s3cret@h:1", `scheme "http": want redis://, rediss:// (TLS) or unix:// (a socket)`},
		{"redis-sentinel://h:26379/mymaster", `scheme "redis-sentinel": want redis://, rediss:// (TLS) or unix:// (a socket); Redis Sentinel is not supported`},
		{"redis://u:s3cret@h:1?bogus=1", `unexpected option: bogus`},
		{"redis://u:s3cret@h:1/x", `invalid database number: "x"`},
	} {
		_, err := redisrate.ParseURL(tt.url)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), ": redis: ") {
			t.Errorf("ParseURL(%q) = %v; want it to say %q, without go-redis's prefix", tt.url, err, tt.want)
		}
	}
}
