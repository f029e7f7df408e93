package redisrate

import (
	"strings"

	"github.com/pace-cli/pace/internal/redact"
)

// RedactURL returns the Redis URL s with its password (or a user name
// that may be a token) replaced by redact.Placeholder, for messages and
// logs. It also redacts URLs that do not parse, and every URL in free
// text such as an error message.
func RedactURL(s string) string {
	r := redact.New()
	if !strings.ContainsAny(s, " \t\r\n") {
		// One URL: Text would end it at a byte such as a control
		// character, leaving the password after it in view.
		return r.RawURL(s)
	}
	return r.Text(s)
}
