package redact

import "strings"

// ForArgs returns a Redactor that knows the credentials of args, a
// program's own arguments (pace's), for the messages that quote them (pflag's "unknown
// shorthand flag: 'u' in -uuser:PW", an extra URL, an unknown command
// that is a URL, a URL given where a file goes that could not be opened):
// they are hidden as a command's are (Argv), and every URL's. Short
// flags run together before the command (-kuuser:PW, -Ecert:PW: curl's
// flags that pace has not) are read from each letter on as curl's, so
// that the value attached to any of them is hidden.
func ForArgs(args []string) *Redactor {
	red := New()
	red.AddArgv(withoutQuotaKey(args))
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			for i := 2; i < len(a); i++ {
				red.AddArgv([]string{"curl", "-" + a[i:]}) // -E cert:PW too
			}
		}
	}
	return red
}

// withoutQuotaKey returns args, pace's arguments, without the value of
// --key: a quota's name, which redact would take for a secret (its flag
// is named like one).
func withoutQuotaKey(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "--key":
			i++ // and its value
		case !strings.HasPrefix(a, "--key="):
			out = append(out, a)
		}
	}
	return out
}
