package redact

import (
	"path"
	"strings"
)

// Argv returns a copy of argv, a command and its arguments, as it may be
// shown: in a failure line, a log, a job log's Command column. The
// command itself must run with argv as it was; Argv does not change it.
//
// Besides what String hides in each argument (URLs with their
// credentials, known secrets), Argv hides:
//
//   - header values with secret names (see IsSecretHeader), given to
//     -H, --header or --proxy-header, as one argument
//     ("Authorization: Bearer x", HTTPie's "X-Api-Key:k") or inside a
//     shell script ("curl -H 'Authorization: ...'");
//   - the password of a URL without a scheme (curl user:pw@host; see
//     isBareUserinfoURL for what is taken for one);
//   - the password in the value of -u, --user, -U, --proxy-user, --auth
//     and --cert (user:password; user: with an empty password, an API
//     key, is hidden whole), and the credentials of a proxy given to -x,
//     --proxy, --preproxy and --socks4/5 without a scheme (user:pw@host);
//   - the cookies' values given to curl's -b or --cookie (name=value;
//     a file's name is kept);
//   - the value of --oauth2-bearer and of any flag whose name is secret
//     as a parameter's is (--password, --token, --api-key, -pass,
//     --client-secret, ...; not --no-password or --ask-password), given
//     as --flag=value or as the next argument;
//   - the values of secret parameters in name=value arguments and form
//     data (token=x, API_TOKEN=x, user=bob&password=x), in URLs without
//     a scheme (example.com/x?api_key=x), and in JSON ("password": "x");
//   - for a few programs, their own password flags: redis-cli -a, HTTPie
//     and xh -a (user:password), mysql and mariadb -pPASSWORD, sshpass -p.
//
// An argument that holds spaces (a shell script given to sh -c) has its
// words redacted as arguments too. Redacting the result again changes
// nothing.
func (r *Redactor) Argv(argv []string) []string {
	return r.argvFixed(argv, nil)
}

// AddArgv records as known secrets, as Add does, every value that Argv
// hides in argv, so that String also hides them in messages that quote
// the command or its arguments.
//
// AddArgv must not run concurrently with other methods on r; see
// Redactor.
func (r *Redactor) AddArgv(argv []string) {
	for _, v := range r.ArgvSecrets(argv) {
		r.Add(v) // "Bearer x": x too
	}
}

// ArgvSecrets returns the values that Argv hides in argv, as written
// there, such as "Bearer x" for "Authorization: Bearer x" and "pw" for
// "-u user:pw".
func (r *Redactor) ArgvSecrets(argv []string) []string {
	var found []string
	r.argvFixed(argv, func(v string) { found = append(found, v) })
	return found
}

// Item returns item, an input item of a command whose argv is argv, as
// it may be shown (--tag, a summary's failed items): hidden whole when a
// credential of argv holds all of it (-H 'Authorization: Bearer {}'),
// with the credentials of argv it holds hidden (-u {} with the item
// alice:pw), and redacted as an argument of its own (a URL with a
// password).
func (r *Redactor) Item(argv []string, item string) string {
	for _, v := range r.ArgvSecrets(argv) {
		switch {
		case len(item) >= 3 && strings.Contains(v, item):
			return Placeholder
		case v != "" && strings.Contains(item, v):
			item = strings.ReplaceAll(item, v, Placeholder)
		}
	}
	return r.Argv([]string{item})[0]
}

// argvFixed redacts argv until nothing changes: hiding one value can
// change what the rules see in an argument (a header's end, a URL's), as
// with String.
func (r *Redactor) argvFixed(argv []string, seen func(string)) []string {
	const maxPasses = 8
	out := r.argv(argv, seen, true)
	if equalStrings(out, argv) {
		return out // the next pass would see the same
	}
	for range maxPasses {
		again := r.argv(out, nil, true)
		if equalStrings(again, out) {
			break
		}
		out = again
	}
	return out
}

// equalStrings reports whether a and b hold the same strings.
func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// valueRule is how a flag's value is redacted.
type valueRule int

const (
	noValue    valueRule = iota // the flag takes no value that Argv knows of
	headerRule                  // "Name: value"
	userRule                    // user:password
	proxyRule                   // user:password@host, with or without a scheme
	wholeRule                   // the whole value is a secret
	cookieRule                  // "name=value; name2=value2", or a cookie file's name
)

// flagRules are the flags of curl, wget and the like whose values hold
// credentials, by name as written.
var flagRules = map[string]valueRule{
	"-H": headerRule, "--header": headerRule, "--proxy-header": headerRule,
	"-u": userRule, "--user": userRule, "-U": userRule, "--proxy-user": userRule,
	"--auth": userRule, "--cert": userRule, "--proxy-cert": userRule,
	"-x": proxyRule, "--proxy": proxyRule, "--preproxy": proxyRule,
	"--socks4": proxyRule, "--socks4a": proxyRule, "--socks5": proxyRule, "--socks5-hostname": proxyRule,
	"--oauth2-bearer": wholeRule, "--cookie": cookieRule,
}

// programFlag is a flag that holds a credential for one program only;
// attachedOnly marks a flag whose value is a credential only when attached
// (mysql -pPASSWORD; a lone -p makes it ask).
type programFlag struct {
	rule         valueRule
	attachedOnly bool
}

// programFlags are the password flags of a few programs, by the
// program's base name.
var programFlags = map[string]map[string]programFlag{
	"curl":         {"-E": {rule: userRule}, "-b": {rule: cookieRule}}, // --cert's and --cookie's short forms
	"http":         {"-a": {rule: userRule}},
	"https":        {"-a": {rule: userRule}},
	"xh":           {"-a": {rule: userRule}},
	"xhs":          {"-a": {rule: userRule}},
	"redis-cli":    {"-a": {rule: wholeRule}},
	"valkey-cli":   {"-a": {rule: wholeRule}},
	"sshpass":      {"-p": {rule: wholeRule}},
	"mysql":        {"-p": {rule: wholeRule, attachedOnly: true}},
	"mysqldump":    {"-p": {rule: wholeRule, attachedOnly: true}},
	"mysqladmin":   {"-p": {rule: wholeRule, attachedOnly: true}},
	"mariadb":      {"-p": {rule: wholeRule, attachedOnly: true}},
	"mariadb-dump": {"-p": {rule: wholeRule, attachedOnly: true}},
}

// argv is one pass of Argv, calling seen with each value hidden. split
// is false when argv are the words of a shell script rather than a
// command's arguments: then they are not split again.
func (r *Redactor) argv(argv []string, seen func(string), split bool) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	var prog map[string]programFlag
	pending := noValue // the rule for this argument, the previous one's value
	for i, a := range argv {
		if pending != noValue {
			out[i] = r.arg(r.value(pending, a, seen), seen, split)
			pending = noValue
			continue
		}
		if p, ok := programFlags[path.Base(a)]; ok {
			prog = p
		}
		rule, attached, hasValue, flag := r.flagOf(a, prog)
		switch {
		case rule == noValue:
			out[i] = r.arg(a, seen, split)
		case hasValue:
			out[i] = flag + r.arg(r.value(rule, attached, seen), seen, split)
		default:
			out[i] = a
			pending = rule
		}
	}
	return out
}

// flagOf returns the rule for a, if it is a flag whose value holds a
// credential: its value when attached (-uUSER:PW, --user=USER:PW), with
// hasValue set, and what precedes the value (-u, --user=). prog is the
// current program's own flags.
func (r *Redactor) flagOf(a string, prog map[string]programFlag) (rule valueRule, value string, hasValue bool, flag string) {
	if len(a) < 2 || a[0] != '-' {
		return noValue, "", false, ""
	}
	if a[1] != '-' { // a short flag, or a long one with one dash (-token x)
		if pf, ok := prog[a[:2]]; ok {
			if len(a) > 2 {
				return pf.rule, a[2:], true, a[:2]
			}
			if !pf.attachedOnly {
				return pf.rule, "", false, a
			}
			return noValue, "", false, ""
		}
		if rule, ok := flagRules[a[:2]]; ok {
			if len(a) > 2 {
				return rule, a[2:], true, a[:2]
			}
			return rule, "", false, a
		}
		if len(a) == 2 {
			return noValue, "", false, ""
		}
	}
	name, v, eq := strings.Cut(a, "=")
	rule, ok := flagRules[name]
	if !ok && r.isSecretFlag(name) {
		rule, ok = wholeRule, true
	}
	switch {
	case !ok:
		return noValue, "", false, ""
	case eq:
		return rule, v, true, name + "="
	}
	return rule, "", false, a
}

// isSecretFlag reports whether the flag called name (with its dashes)
// takes a secret as its value: its name is a secret parameter name, as
// --password, --api-key and -token are, and does not say the opposite
// (--no-password, --ask-password).
func (r *Redactor) isSecretFlag(name string) bool {
	n := strings.ToLower(strings.TrimLeft(name, "-"))
	if n == "" || strings.HasPrefix(n, "no-") || strings.HasPrefix(n, "ask-") {
		return false
	}
	return r.isSecretName(n) || r.isSecretName(strings.ReplaceAll(n, "-", "_"))
}

// value returns v, the value of a flag of the given rule, with its
// credential hidden.
func (r *Redactor) value(rule valueRule, v string, seen func(string)) string {
	var b strings.Builder
	switch rule {
	case headerRule:
		name, val, ok := strings.Cut(v, ":")
		if !ok || !IsSecretHeader(name) {
			return v
		}
		b.WriteString(name)
		b.WriteByte(':')
		trimmed := strings.TrimLeft(val, " \t")
		b.WriteString(val[:len(val)-len(trimmed)])
		hide(&b, trimmed, seen)
	case userRule:
		if !strings.Contains(v, ":") {
			return v // a user name alone: the program asks for the password
		}
		if hasScheme(v) {
			return v // redis-cli -u redis://...: arg redacts URLs
		}
		writeUserinfo(&b, v, seen)
	case proxyRule:
		if strings.Contains(v, "://") {
			return v // arg redacts URLs
		}
		return r.rawURL(v, 0, seen)
	case wholeRule:
		hide(&b, v, seen)
	case cookieRule:
		if !strings.Contains(v, "=") {
			return v // a file to read cookies from
		}
		for i, c := range strings.Split(v, ";") {
			if i > 0 {
				b.WriteByte(';')
			}
			name, val, _ := strings.Cut(c, "=")
			b.WriteString(name + "=")
			hide(&b, val, seen)
		}
	default:
		return v
	}
	return b.String()
}

// hasScheme reports whether v starts with a URL scheme and "://".
func hasScheme(v string) bool {
	i := strings.Index(v, "://")
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		if !isSchemeChar(v[j]) {
			return false
		}
	}
	return true
}

// arg returns the argument a with the credentials hidden that its text
// shows wherever it stands; split says whether an argument with spaces,
// a script, has its words redacted as arguments.
func (r *Redactor) arg(a string, seen func(string), split bool) string {
	a = hideHeaderText(a, seen)
	a = r.hideJSONText(a, seen)
	if strings.Contains(a, "://") {
		a = r.text(a, seen)
	} else if isBareUserinfoURL(a) {
		a = r.rawURL(a, 0, seen) // curl user:pw@host
	}
	if split && strings.ContainsAny(a, " \t\n") {
		a = r.words(a, seen)
	} else if !strings.Contains(a, "://") && strings.Contains(a, "=") {
		var b strings.Builder
		r.writeFlagParams(&b, a, seen)
		a = b.String()
	}
	return r.hideKnown(a)
}

// text is Text, calling seen with each value hidden.
func (r *Redactor) text(s string, seen func(string)) string {
	if seen == nil {
		return r.Text(s)
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeChar(s[start-1]) {
			start--
		}
		end := urlEnd(s, start, i+3)
		b.WriteString(s[:start])
		b.WriteString(r.rawURL(s[start:end], 0, seen))
		s = s[end:]
	}
}

// writeFlagParams writes a, an argument with '=' and no URL scheme, to b
// as writeParams does, but with the leading dashes of a flag's name
// ignored (--password=x, -token=x).
func (r *Redactor) writeFlagParams(b *strings.Builder, a string, seen func(string)) {
	dashes := len(a) - len(strings.TrimLeft(a, "-"))
	b.WriteString(a[:dashes])
	r.writeParams(b, a[dashes:], 0, seen)
}

// words redacts the words of s, a script, as the arguments of a command:
// each word without the quotes and brackets around it, and the flags
// among them with their values.
func (r *Redactor) words(s string, seen func(string)) string {
	type word struct{ pre, w, post string }
	var ws []word
	var seps []string
	for {
		i := strings.IndexFunc(s, func(c rune) bool { return c != ' ' && c != '\t' && c != '\n' })
		if i < 0 {
			seps = append(seps, s)
			break
		}
		seps = append(seps, s[:i])
		s = s[i:]
		end := strings.IndexAny(s, " \t\n")
		if end < 0 {
			end = len(s)
		}
		w := s[:end]
		s = s[end:]
		core := strings.TrimLeft(w, `'"(`)
		pre := w[:len(w)-len(core)]
		inner := strings.TrimRight(core, `'";)`)
		ws = append(ws, word{pre, inner, core[len(inner):]})
	}
	args := make([]string, len(ws))
	for i, w := range ws {
		args[i] = w.w
	}
	red := r.argv(args, seen, false)
	var b strings.Builder
	for i, w := range ws {
		b.WriteString(seps[i])
		b.WriteString(w.pre)
		b.WriteString(red[i])
		b.WriteString(w.post)
	}
	b.WriteString(seps[len(ws)])
	return b.String()
}

// hideHeaderText hides the values of secret headers written as
// "Name: value" in s, an argument or a script: after a quote, a value runs
// to the matching quote; otherwise to the end of the line.
func hideHeaderText(s string, seen func(string)) string {
	if !strings.Contains(s, ":") {
		return s
	}
	var b strings.Builder
	done := 0 // s[:done] is written
	for i := 0; i < len(s); i++ {
		if s[i] != ':' {
			continue
		}
		j := i
		for j > done && isTokenChar(s[j-1]) {
			j--
		}
		if j == i || !IsSecretHeader(s[j:i]) {
			continue
		}
		start := i + 1
		for start < len(s) && (s[start] == ' ' || s[start] == '\t') {
			start++
		}
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		if j > 0 && (s[j-1] == '"' || s[j-1] == '\'') {
			if q := strings.IndexByte(s[start:end], s[j-1]); q >= 0 {
				end = start + q
			}
		}
		if end == start {
			continue
		}
		b.WriteString(s[done:start])
		hide(&b, s[start:end], seen)
		done, i = end, end-1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// isTokenChar reports whether c may appear in a header name as people
// write them.
func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// hideJSONText hides the string values of secret members written as
// "name": "value" in s (a JSON body given to curl -d).
func (r *Redactor) hideJSONText(s string, seen func(string)) string {
	if !strings.Contains(s, `":`) && !strings.Contains(s, `" :`) {
		return s
	}
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		// s[i] may open a member's name.
		q := strings.IndexByte(s[i+1:], '"')
		if q < 0 {
			break
		}
		name := s[i+1 : i+1+q]
		k := i + 1 + q + 1
		for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		if k >= len(s) || s[k] != ':' {
			continue
		}
		k++
		for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n') {
			k++
		}
		if k >= len(s) || s[k] != '"' || !(r.isSecretName(strings.ToLower(name)) || IsSecretHeader(name)) {
			i = k - 1
			continue
		}
		end := closingQuote(s, k+1)
		if end < 0 {
			end = len(s)
		}
		b.WriteString(s[done : k+1])
		hide(&b, s[k+1:end], seen)
		done, i = end, end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}
