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
	if i := strings.Index(s, "://"); i > 0 && strings.ContainsAny(s, " \t\r\n") && !strings.ContainsAny(s[:i], " \t\r\n\"'") {
		// One URL with a space in it (Text would end it there, and show
		// the rest of a password): everything between the scheme and its
		// last @ may be the user name and password.
		if j := strings.LastIndex(s, "@"); j > i+3 {
			return s[:i+3] + redact.Placeholder + r.Text(s[j:])
		}
	}
	if !strings.ContainsAny(s, " \t\r\n") {
		// One URL: Text would end it at a byte such as a control
		// character, leaving the password after it in view.
		return r.RawURL(s)
	}
	return r.Text(s)
}
