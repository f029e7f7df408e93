package redact

import (
	"net/url"
	"testing"
)

// checkRawURL runs RawURL on every row of tests and checks the result.
func checkRawURL(t *testing.T, r *Redactor, tests []struct{ in, want string }) {
	t.Helper()
	for _, tt := range tests {
		if got := r.RawURL(tt.in); got != tt.want {
			t.Errorf("RawURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRawURLUserinfo(t *testing.T) {
	checkRawURL(t, nil, []struct{ in, want string }{
		{"https://api.example.com/items/3", "https://api.example.com/items/3"},
		{"https://alice:s3cret@api.example.com/x", "https://alice:REDACTED@api.example.com/x"},
		{"https://ghp_abc123@github.com/o/r.git", "https://REDACTED@github.com/o/r.git"},
		{"ftp://anon:me@ftp.example.org/pub", "ftp://anon:REDACTED@ftp.example.org/pub"},
		{"//alice:s3cret@h/x", "//alice:REDACTED@h/x"},
		{"http://u:p@[::1]:80/", "http://u:REDACTED@[::1]:80/"},
		{"http://[::1]:80/a@b", "http://[::1]:80/a@b"},
		// An '@' after the authority is not userinfo.
		{"http://localhost:8080/users/bob@example.com", "http://localhost:8080/users/bob@example.com"},
		{"https://h/search?email=bob@example.com", "https://h/search?email=bob@example.com"},
		// A user name with an empty password is a token (curl -u key:).
		{"https://sk_test_abc:@api.example.com/v1", "https://REDACTED@api.example.com/v1"},
		{"https://a@b:@h/", "https://REDACTED@h/"},
		{"https://me@example.com:pw@h/", "https://REDACTED@h/"},
		{"https://me%40example.com:pw@h/", "https://me%40example.com:REDACTED@h/"},
		// Empty userinfo hides nothing.
		{"https://@h/", "https://@h/"},
		{"https://:@h/", "https://:@h/"},
		// Already redacted.
		{"https://alice:REDACTED@h/", "https://alice:REDACTED@h/"},
		{"https://REDACTED@h/", "https://REDACTED@h/"},
		// A slash short: the password is hidden all the same.
		{"http:/user:s3cret@host/x", "http:/user:REDACTED@host/x"},
		{"redis:/u:s3cret@127.0.0.1:1/", "redis:/u:REDACTED@127.0.0.1:1/"},
		{"file:/tmp/a", "file:/tmp/a"},
	})
}

func TestRawURLRedis(t *testing.T) {
	checkRawURL(t, nil, []struct{ in, want string }{
		{"", ""},
		{"redis://h:1", "redis://h:1"},
		{"redis://:pw@h:6379/0", "redis://:REDACTED@h:6379/0"},
		{"redis://bob@h:1", "redis://REDACTED@h:1"},
		{"redis://bob:s3cret@h:1/2", "redis://bob:REDACTED@h:1/2"},
		{"rediss://user:pw@h", "rediss://user:REDACTED@h"},
		{"rediss://pace:s3cret@redis.internal:6380/2", "rediss://pace:REDACTED@redis.internal:6380/2"},
		{"unix://user:pw@/path/sock?db=1", "unix://user:REDACTED@/path/sock?db=1"},
		{"unix://u:s3cret@/run/redis.sock", "unix://u:REDACTED@/run/redis.sock"},
		{"redis://u:p%40ss@h", "redis://u:REDACTED@h"},
		{"redis://u:p@ss@h:1", "redis://u:REDACTED@h:1"},
		{"redis://h:6379/0?password=pw&dial_timeout=3s", "redis://h:6379/0?password=REDACTED&dial_timeout=3s"},
		{"redis://h:1?addr=h2:1&addr=h3:1&cluster=true", "redis://h:1?addr=h2:1&addr=h3:1&cluster=true"},
		// Passwords with an unescaped '/' or '#', which url.Parse misreads.
		{"redis://u:s3c/ret@h:1", "redis://u:REDACTED@h:1"},
		{"redis://u:12#ret@h:1", "redis://u:REDACTED@h:1"},
		{"redis://u:12?ret@h:1/0", "redis://u:REDACTED@h:1/0"},
		{"redis://u:s3cret\x7f@h:1", "redis://u:REDACTED@h:1"},
	})
}

func TestRawURLUnparsable(t *testing.T) {
	checkRawURL(t, nil, []struct{ in, want string }{
		{"http://bob:pa ss@host/x", "http://bob:REDACTED@host/x"},
		{"http://bob:p%zz@host/x", "http://bob:REDACTED@host/x"},
		{"bob:hunter2@host/x", "bob:REDACTED@host/x"},
		{"ghp_abc123@github.com/o/r", "REDACTED@github.com/o/r"},
		{"http://[::1/x?token=abc", "http://[::1/x?token=REDACTED"},
		{"https://h/%zz?token=abc", "https://h/%zz?token=REDACTED"},
		{"https://h/a b?api_key=k 1&x=2", "https://h/a b?api_key=REDACTED&x=2"},
		{" https://u:p@h ", " https://u:REDACTED@h "},
		{"not a url", "not a url"},
		{"/relative/path?token=abc&next=http://h/", "/relative/path?token=REDACTED&next=http://h/"},
		// Ambiguous: "8443?email=bob" reads as a password, as "12#ret"
		// does above; hiding too much is the safe mistake.
		{"https://h:8443?email=bob@example.com", "https://h:REDACTED@example.com"},
	})
}

func TestRawURLParams(t *testing.T) {
	checkRawURL(t, nil, []struct{ in, want string }{
		{"https://h/x?page=2&api_key=abc123&sort=asc", "https://h/x?page=2&api_key=REDACTED&sort=asc"},
		{"https://h/x?access_token=t0k&Signature=zz&key=k", "https://h/x?access_token=REDACTED&Signature=REDACTED&key=REDACTED"},
		{"https://h/x?monkey=1&keys=2", "https://h/x?monkey=1&keys=2"},
		{"https://h/x?token", "https://h/x?token"}, // no value to hide
		{"https://h/x?token=", "https://h/x?token="},
		{"https://h/x?token=a=b&c=d", "https://h/x?token=REDACTED&c=d"},
		{"https://h/x?API%5FKEY=abc", "https://h/x?API%5FKEY=REDACTED"},
		{"https://h/x?a=%zz&b=+&c", "https://h/x?a=%zz&b=+&c"},
		{"https://h/x?", "https://h/x?"},
		{"https://h/x?&&token=1&&", "https://h/x?&&token=REDACTED&&"},
		// ';' separates parameters too, but a secret value runs to '&'.
		{"https://h/x?a=1;token=abc;b=2", "https://h/x?a=1;token=REDACTED;b=2"},
		{"https://h/x?token=abc;def&b=2", "https://h/x?token=REDACTED&b=2"},
		{"https://h/x?a=1&amp;token=abc", "https://h/x?a=1&amp;token=REDACTED"}, // copied from HTML
		// Fragments.
		{"https://app.example.com/cb#access_token=ya29.a0Af&token_type=bearer&expires_in=3599",
			"https://app.example.com/cb#access_token=REDACTED&token_type=bearer&expires_in=3599"},
		{"https://app.example.com/#/callback?id_token=eyJ.eyJ.c2ln&state=abc",
			"https://app.example.com/#/callback?id_token=REDACTED&state=abc"},
		{"https://h/doc#section-2", "https://h/doc#section-2"},
		{"https://h/x?a=1#b=2&code=c0de", "https://h/x?a=1#b=2&code=REDACTED"},
		// Path parameters.
		{"https://h/app;jsessionid=ABC123?x=1", "https://h/app;jsessionid=REDACTED?x=1"},
		{"https://h/app;JSESSIONID=ABC123/page", "https://h/app;JSESSIONID=REDACTED/page"},
		{"https://h/a;v=2;token=t;w=3/b;sid=1", "https://h/a;v=2;token=REDACTED;w=3/b;sid=1"},
		{"https://h/a;b/c;", "https://h/a;b/c;"},
		// URLs in parameter values.
		{"https://h/login?next=https://u:p@h2/x?sig=1&b=2", "https://h/login?next=https://u:REDACTED@h2/x?sig=REDACTED&b=2"},
		{"https://h/login?next=https%3A%2F%2Fh2%2F", "https://h/login?next=https%3A%2F%2Fh2%2F"},
		// Percent-encoded, as encodeURIComponent writes them: hidden where
		// they stand, the rest kept as written.
		{"http://h/s?st=404&next=http%3A%2F%2Fu%3APWENC%40h%2Fx%3Ftoken%3DTOKENC",
			"http://h/s?st=404&next=http%3A%2F%2Fu%3AREDACTED%40h%2Fx%3Ftoken%3DREDACTED"},
		{"http://h/s?next=http%3a%2f%2fu%3aP%2540W%40h%2fx%3fsig%3DS%26page%3D2&b=1",
			"http://h/s?next=http%3a%2f%2fu%3aREDACTED%40h%2fx%3fsig%3DREDACTED%26page%3D2&b=1"},
		{"https://h/cb?next=https%3A%2F%2FTOKONLY%40h2%2F%23access_token%3DFRAG",
			"https://h/cb?next=https%3A%2F%2FREDACTED%40h2%2F%23access_token%3DREDACTED"},
		{"https://h/cb?next=https%3A//u:pw%40h2/", "https://h/cb?next=https%3A//u:REDACTED%40h2/"},
		{"https://h/cb#next=https%3A%2F%2Fh2%2F%3Fapi_key%3DK%2BK", "https://h/cb#next=https%3A%2F%2Fh2%2F%3Fapi_key%3DREDACTED"},
		// Escaped twice: one level per nesting.
		{"https://h/?a=https%3A%2F%2Fh2%2F%3Fb%3Dhttp%253A%252F%252Fu%253AINNER%2540h3",
			"https://h/?a=https%3A%2F%2Fh2%2F%3Fb%3Dhttp%253A%252F%252Fu%253AREDACTED%2540h3"},
		// Escaped values that hold no URL are left alone.
		{"https://h/s?email=bob%40example.com&q=a%3Ab&x=%zz%3A%2F%2F", "https://h/s?email=bob%40example.com&q=a%3Ab&x=%zz%3A%2F%2F"},
		{"https://h/s?q=see+http%3A%2F%2Fh2%2Fdoc", "https://h/s?q=see+http%3A%2F%2Fh2%2Fdoc"},
	})
}

// TestAddURLEncodedNested: AddURL records the credentials of a
// percent-encoded nested URL both as the outer URL writes them and as
// they are, so String finds them anywhere.
func TestAddURLEncodedNested(t *testing.T) {
	u, err := url.Parse("https://h/cb?next=https%3A%2F%2Fu%3Ap%2540ss-word%40h2%2F%3Ftoken%3Dtok-en1")
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	r.AddURL(u)
	for _, in := range []string{"p@ss-word", "p%40ss-word", "p%2540ss-word", "tok-en1"} {
		if got := r.String("failed: " + in + "."); got != "failed: REDACTED." {
			t.Errorf("after AddURL(%q), String(%q) = %q, want the secret hidden", u, "failed: "+in+".", got)
		}
	}
}

// TestRawURLPresigned checks pre-signed URLs of the main clouds (made-up
// values): signatures and credentials go, the rest stays so that URLs can
// be told apart.
func TestRawURLPresigned(t *testing.T) {
	checkRawURL(t, nil, []struct{ in, want string }{
		{ // AWS S3, Signature Version 4, with a session token
			"https://examplebucket.s3.us-east-1.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256" +
				"&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240524%2Fus-east-1%2Fs3%2Faws4_request" +
				"&X-Amz-Date=20240524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
				"&X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr%2F%2F%2F%2F%2FwEaCXVzLWVhc3QtMSJHMEUCIQ" +
				"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
			"https://examplebucket.s3.us-east-1.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256" +
				"&X-Amz-Credential=REDACTED" +
				"&X-Amz-Date=20240524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
				"&X-Amz-Security-Token=REDACTED" +
				"&X-Amz-Signature=REDACTED",
		},
		{ // AWS S3, Signature Version 2
			"https://bucket.s3.amazonaws.com/photos/p.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1700000000&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D",
			"https://bucket.s3.amazonaws.com/photos/p.jpg?AWSAccessKeyId=REDACTED&Expires=1700000000&Signature=REDACTED",
		},
		{ // Google Cloud Storage, V4 signing
			"https://storage.googleapis.com/example-bucket/cat.jpeg?X-Goog-Algorithm=GOOG4-RSA-SHA256" +
				"&X-Goog-Credential=example%40example-project.iam.gserviceaccount.com%2F20240126%2Fus-central1%2Fstorage%2Fgoog4_request" +
				"&X-Goog-Date=20240126T181309Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host" +
				"&X-Goog-Signature=247a2aa45f169edf4d187d54e7cc46e4731b1e6273242c4f4c39a1d2507a0e58",
			"https://storage.googleapis.com/example-bucket/cat.jpeg?X-Goog-Algorithm=GOOG4-RSA-SHA256" +
				"&X-Goog-Credential=REDACTED" +
				"&X-Goog-Date=20240126T181309Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host" +
				"&X-Goog-Signature=REDACTED",
		},
		{ // CloudFront, custom policy
			"https://d111111abcdef8.cloudfront.net/image.jpg?Policy=eyJTdGF0ZW1lbnQiOlt7IlJlc291cmNlIjoiKiJ9XX0_" +
				"&Signature=Nql641NHEUkUaXQHZINK1FZ~SYeUSoBJMxjdgqrzIdzV2gyEXPDNv0pY~~&Key-Pair-Id=K2JCJMDEHXQW5F",
			"https://d111111abcdef8.cloudfront.net/image.jpg?Policy=REDACTED&Signature=REDACTED&Key-Pair-Id=REDACTED",
		},
		{ // Azure Blob Storage, service SAS
			"https://myaccount.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r" +
				"&se=2024-01-01T00:00:00Z&st=2023-12-31T00:00:00Z&spr=https&sig=3kF0jX%2BLEvM0Zk2jlDkHbKz3m9a6Yv0cB9nSPdVXwQo%3D",
			"https://myaccount.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r" +
				"&se=2024-01-01T00:00:00Z&st=2023-12-31T00:00:00Z&spr=https&sig=REDACTED",
		},
		{ // OAuth 2 authorization response
			"https://app.example.com/callback?code=4%2F0AX4XfWexample&state=xyz&scope=email",
			"https://app.example.com/callback?code=REDACTED&state=xyz&scope=email",
		},
	})
}

func TestRawURLExtraParams(t *testing.T) {
	r := New("X-Tenant-Id", " Customer ", "")
	checkRawURL(t, r, []struct{ in, want string }{
		{"https://h/x?x-tenant-id=42&CUSTOMER=acme&other=1", "https://h/x?x-tenant-id=REDACTED&CUSTOMER=REDACTED&other=1"},
		{"https://h/x;customer=acme#customer=acme", "https://h/x;customer=REDACTED#customer=REDACTED"},
		{"https://h/x?token=t", "https://h/x?token=REDACTED"}, // built-in rules still apply
	})
	// The extras belong to r only.
	checkRawURL(t, New(), []struct{ in, want string }{
		{"https://h/x?x-tenant-id=42&customer=acme", "https://h/x?x-tenant-id=42&customer=acme"},
	})
}

func TestURL(t *testing.T) {
	var r *Redactor
	if got := r.URL(nil); got != "" {
		t.Errorf("URL(nil) = %q, want \"\"", got)
	}
	u := &url.URL{Scheme: "https", User: url.UserPassword("a@b", "p:w/#"), Host: "h", Path: "/x;sessionid=s", RawQuery: "token=1&b=2", Fragment: "code=c"}
	if got, want := r.URL(u), "https://a%40b:REDACTED@h/x;sessionid=REDACTED?token=REDACTED&b=2#code=REDACTED"; got != want {
		t.Errorf("URL(%q) = %q, want %q", u, got, want)
	}
	u = &url.URL{Scheme: "https", User: url.User("tok/en"), Host: "h"}
	if got, want := r.URL(u), "https://REDACTED@h"; got != want {
		t.Errorf("URL(%q) = %q, want %q", u, got, want)
	}
	// A parsed URL reads as its text does.
	for _, s := range []string{
		"https://alice:s3cret@h/x?api_key=k#access_token=t",
		"redis://:pw@h:6379/0",
		"unix://user:pw@/path/sock?db=1",
		"https://h/app;JSESSIONID=abc/x?Signature=s&X-Amz-Date=1",
		"user:pass@host/x",
	} {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", s, err)
		}
		if got, want := r.URL(u), r.RawURL(u.String()); got != want {
			t.Errorf("URL(%q) = %q, want %q as RawURL gives", s, got, want)
		}
	}
}

func BenchmarkRawURL(b *testing.B) {
	r := New("tenant")
	for _, bm := range []struct{ name, url string }{
		{"plain", "https://api.example.com/v1/items/12345"},
		{"query", "https://api.example.com/v1/items?page=2&sort=asc&api_key=k3y&tenant=acme"},
		{"presigned", "https://b.s3.us-east-1.amazonaws.com/k.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20240101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=9f3a"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.RawURL(bm.url)
			}
		})
	}
}
