package redact_test

import (
	"fmt"
	"net/url"

	"github.com/pace-cli/pace/internal/redact"
)

func ExampleRedactor_RawURL() {
	var r *redact.Redactor // built-in rules only
	fmt.Println(r.RawURL("rediss://pace:s3cret@redis.internal:6380/2"))
	fmt.Println(r.RawURL("https://ghp_abc123@github.com/o/r.git"))
	fmt.Println(r.RawURL("https://b.s3.amazonaws.com/k?X-Amz-Date=20240101T000000Z&X-Amz-Signature=9f3a"))
	fmt.Println(r.RawURL("https://app.example.com/cb;jsessionid=A1B2#access_token=ya29&token_type=bearer"))
	// Output:
	// rediss://pace:REDACTED@redis.internal:6380/2
	// https://REDACTED@github.com/o/r.git
	// https://b.s3.amazonaws.com/k?X-Amz-Date=20240101T000000Z&X-Amz-Signature=REDACTED
	// https://app.example.com/cb;jsessionid=REDACTED#access_token=REDACTED&token_type=bearer
}

// Extra parameter names, as --redact-param gives them, match whatever
// their case.
func ExampleNew() {
	r := redact.New("tenant")
	fmt.Println(r.RawURL("https://api.example.com/v1/items?Tenant=acme&page=2"))
	// Output: https://api.example.com/v1/items?Tenant=REDACTED&page=2
}

// A fetch executor shares one Redactor and derives one per request, in
// which it records that request's secrets.
func ExampleRedactor_With() {
	base := redact.New()

	u, _ := url.Parse("https://api.example.com/v1/items/7?api_key=k3y-123")
	red := base.With("Bearer abc123xyz") // the request's Authorization header
	red.AddURL(u)

	err := fmt.Errorf("fetch %s: server said %q", u, "bad key k3y-123 for abc123xyz")
	fmt.Println(red.Error(err))
	fmt.Println(base.String("abc123xyz")) // the shared Redactor never saw it
	// Output:
	// fetch https://api.example.com/v1/items/7?api_key=REDACTED: server said "bad key REDACTED for REDACTED"
	// abc123xyz
}

// net/http quotes the URL in its errors; the quoted URL is redacted whole.
func ExampleRedactor_Text() {
	var r *redact.Redactor
	fmt.Println(r.Text(`Get "https://bob:pa ss@h.example/a?token=t0k": dial tcp: lookup h.example: no such host`))
	// Output: Get "https://bob:REDACTED@h.example/a?token=REDACTED": dial tcp: lookup h.example: no such host
}
