package items

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pace-cli/pace/runner"
)

// FuzzScan checks Scan against a plain model of the input's items, on
// any bytes: lines or NULs, CRLF, no final separator, blank and empty
// items, NUL bytes in lines, invalid UTF-8, and items longer than the
// read buffer (each 0xEE byte stands for 40,000 bytes) or than the limit;
// read whole or a byte at a time, and counted alike (Count).
func FuzzScan(f *testing.F) {
	f.Add([]byte("a\nb b\r\n\n \t\nc"), false, uint32(0))
	f.Add([]byte("a\x00b\r\x00\x00 \x00"), true, uint32(0))
	f.Add([]byte("x\xeey\n\xee\xee\r\nz\xff\xfe"), false, uint32(70000))
	f.Add([]byte("\xee\xee\xee\x00b\nc\x00"), true, uint32(100000))
	f.Add([]byte("ok\n12345678901\r\n1234567890\r\nb\x00c"), false, uint32(10))
	f.Fuzz(func(t *testing.T, data []byte, nul bool, maxLen uint32) {
		if bytes.Count(data, []byte{0xee}) > 8 {
			return
		}
		in := bytes.ReplaceAll(data, []byte{0xee}, bytes.Repeat([]byte{'y'}, 40000))
		opts := ReadOptions{NUL: nul, MaxLen: int(maxLen % (200 << 10))}
		want := scanModel(in, opts)
		for _, slow := range []bool{false, true} {
			r := bytes.NewReader(in)
			var got []string
			var err error
			if slow {
				err = Scan(iotest.OneByteReader(r), opts, func(it runner.Item) error { got = append(got, shownItem(it)); return nil })
			} else {
				err = Scan(r, opts, func(it runner.Item) error { got = append(got, shownItem(it)); return nil })
			}
			if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
				t.Fatalf("Scan(%q, NUL %v, MaxLen %d, one byte at a time %v) = %.300q, %v; want %.300q", data, nul, opts.MaxLen, slow, got, err, want)
			}
		}
		if n, err := Count(bytes.NewReader(in), opts); err != nil || n != int64(len(want)) {
			t.Fatalf("Count(%q) = %d, %v; want %d", data, n, err, len(want))
		}
	})
}

// shownItem is an item's text, or its error.
func shownItem(it runner.Item) string {
	switch {
	case errors.Is(it.Err, ErrItemTooLong):
		return "ERR too long"
	case errors.Is(it.Err, ErrItemNUL):
		return "ERR NUL"
	case it.Err != nil:
		return "ERR " + it.Err.Error()
	}
	return it.Text
}

// scanModel is what Scan yields for in, written plainly: split at every
// separator (a last one ends the last item), an item longer than the limit
// (counting a CR before its newline) an error, a CR before a newline
// dropped, blank items skipped, a NUL in a line an error.
func scanModel(in []byte, opts ReadOptions) []string {
	sep := "\n"
	if opts.NUL {
		sep = "\x00"
	}
	maxLen := opts.MaxLen
	if maxLen <= 0 {
		maxLen = DefaultMaxItem
	}
	parts := strings.Split(string(in), sep)
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	var out []string
	for _, p := range parts {
		switch {
		case len(p) > maxLen:
			out = append(out, "ERR too long")
			continue
		case !opts.NUL:
			p = strings.TrimSuffix(p, "\r")
		}
		switch {
		case strings.Trim(p, " \t") == "":
		case !opts.NUL && strings.Contains(p, "\x00"):
			out = append(out, "ERR NUL")
		default:
			out = append(out, p)
		}
	}
	return out
}
