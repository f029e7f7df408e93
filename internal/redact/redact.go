// Package redact hides credentials wherever pace shows a URL, a header, a
// message or an error, replacing each with one placeholder, Placeholder.
//
// Two kinds of thing are hidden. Rules recognise credentials by their
// place: the password in a URL's userinfo (or the whole userinfo when it
// is only a user name, as in https://TOKEN@github.com), and the values of
// query, fragment and path parameters with secret names (api_key, token,
// X-Amz-Signature, access_token, ;jsessionid=, ...). Known secrets are
// values the caller records, such as an Authorization header, and are
// hidden wherever they appear.
package redact

import "strings"

// Placeholder replaces every credential that a Redactor hides.
const Placeholder = "REDACTED"

// minSecretLen is the length, in bytes, of the shortest known secret that
// Add records: hiding every "a" or "12" in a message would garble it and
// protect nothing.
const minSecretLen = 3

// Redactor hides credentials in URLs (URL, RawURL), free text (Text,
// String), header values (Header) and errors (Error).
//
// Its rules are fixed when it is made: the built-in secret parameter names
// plus those given to New. Known secrets, recorded with Add and AddURL, are
// hidden by String, Header and Error on top of the rules. The zero value
// and a nil *Redactor apply the built-in rules and know no secrets.
//
// A program makes one Redactor with New when it starts and derives one per
// request with With, which copies the rules and known secrets, so that a
// request's secrets do not accumulate in the shared Redactor:
//
//	base := redact.New(extraParams...)      // once
//	red := base.With(req.Header.Get("Authorization"))
//	red.AddURL(req.URL)
//	log.Print(red.Error(err))
//
// Add and AddURL change the Redactor they are called on (a nil one
// panics) and must not run concurrently with any other method on it. All
// other methods, With included, only read it, so a Redactor that is no
// longer being configured is safe for concurrent use. Redactors derived
// with With, or copied by value, share nothing that Add changes.
type Redactor struct {
	extra   map[string]struct{} // extra secret parameter names, lower-case; never changed after New
	secrets []string            // known secret values and their escaped forms; see Add
}

// New returns a Redactor that also treats the parameters called
// extraParams as secret, as --redact-param does. Names match whatever
// their case; empty names are ignored.
func New(extraParams ...string) *Redactor {
	r := &Redactor{}
	for _, name := range extraParams {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if r.extra == nil {
			r.extra = make(map[string]struct{}, len(extraParams))
		}
		r.extra[name] = struct{}{}
	}
	return r
}

// With returns a new Redactor with r's rules and known secrets, to which
// secrets are added as Add does. Later calls to Add on either Redactor do
// not affect the other. With on a nil Redactor starts from the built-in
// rules.
func (r *Redactor) With(secrets ...string) *Redactor {
	c := &Redactor{}
	if r != nil {
		c.extra = r.extra
		c.secrets = r.secrets[:len(r.secrets):len(r.secrets)] // Add reallocates
	}
	for _, s := range secrets {
		c.Add(s)
	}
	return c
}
