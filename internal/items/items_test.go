package items

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/pace-cli/pace/runner"
)

func collect(t *testing.T, r io.Reader, opts ReadOptions) ([]string, error) {
	t.Helper()
	out := make(chan runner.Item)
	errc := make(chan error, 1)
	go func() { errc <- Read(context.Background(), r, opts, out); close(out) }()
	var got []string
	for it := range out {
		if it.Err != nil {
			got = append(got, "ERR "+it.Err.Error())
		} else {
			got = append(got, it.Text)
		}
	}
	return got, <-errc
}

func TestRead(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opts ReadOptions
		want []string
	}{
		{"lines", "a\nb b\nc\n", ReadOptions{}, []string{"a", "b b", "c"}},
		{"no final newline", "a\nb", ReadOptions{}, []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", ReadOptions{}, []string{"a", "b"}},
		{"empty lines dropped", "\na\n\n\nb\n\n", ReadOptions{}, []string{"a", "b"}},
		{"blank lines dropped", " \na\n\t\n \t \nb\n", ReadOptions{}, []string{"a", "b"}},
		{"spaces inside kept", " a \n", ReadOptions{}, []string{" a "}},
		{"nul", "a\nb\x00c d\x00\x00", ReadOptions{NUL: true}, []string{"a\nb", "c d"}},
		{"nul keeps cr", "a\r\x00", ReadOptions{NUL: true}, []string{"a\r"}},
		{"skip", "a\n#x\nb\n", ReadOptions{Skip: func(s string) bool { return s[0] == '#' }}, []string{"a", "b"}},
		{"nul in a line", "a\nb\x00c\nd\n", ReadOptions{},
			[]string{"a", `ERR item "b\x00c" holds a NUL byte, which no command line can carry: remove it, or give NUL-separated items with -0`, "d"}},
		{"too long", "ok\n" + strings.Repeat("x", 11) + "\nfine\n" + strings.Repeat("y", 10), ReadOptions{MaxLen: 10},
			[]string{"ok", "ERR item too long: longer than 10 bytes", "fine", strings.Repeat("y", 10)}},
	}
	for _, tt := range tests {
		got, err := collect(t, strings.NewReader(tt.in), tt.opts)
		if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("%s: Read(%q) = %q, %v; want %q", tt.name, tt.in, got, err, tt.want)
		}
		n, err := Count(strings.NewReader(tt.in), tt.opts)
		if err != nil || n != int64(len(tt.want)) {
			t.Errorf("%s: CountItems = %d, %v; want %d", tt.name, n, err, len(tt.want))
		}
	}
}

func TestReadItemsLongerThanBuffer(t *testing.T) {
	long := strings.Repeat("z", 200<<10) // past bufio's 64 KiB buffer
	got, err := collect(t, strings.NewReader("a\n"+long+"\nb\n"+long+"x"), ReadOptions{MaxLen: 200 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != "a" || got[1] != long || got[2] != "b" {
		t.Errorf("got %d items (%.20q...), want a, the long one, b, an error", len(got), got)
	}
	if !strings.HasPrefix(got[3], "ERR") {
		t.Errorf("item 4 = %.20q, want an error (one byte too long)", got[3])
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		r.n++
		return copy(p, "a\nb\n"), nil
	}
	return 0, errors.New("disk on fire")
}

func TestReadItemsReadError(t *testing.T) {
	got, err := collect(t, &failingReader{}, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("error = %v, want the read error", err)
	}
	if fmt.Sprint(got) != "[a b]" {
		t.Errorf("items = %q, want [a b] (those read before the error)", got)
	}
}

func TestReadItemsStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan runner.Item) // nobody reads
	cancel()
	err := Read(ctx, strings.NewReader("a\nb\n"), ReadOptions{}, out)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ReadItems after cancel = %v, want context.Canceled", err)
	}
}

func TestReadColumns(t *testing.T) {
	out := make(chan runner.Item, 10)
	err := Read(context.Background(), strings.NewReader("a b\tc\nd\n"), ReadOptions{ColSep: regexp.MustCompile(`[ \t]+`)}, out)
	close(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it := range out {
		got = append(got, fmt.Sprintf("%q", it.Cols))
	}
	if want := []string{`["a" "b" "c"]`, `["d"]`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("columns = %v, want %v", got, want)
	}
}
