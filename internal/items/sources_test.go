package items

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/pace-cli/pace/runner"
)

func TestSplitSources(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		command []string
		sources []Source
		err     string
	}{
		{args: []string{"echo", "{}"}, command: []string{"echo", "{}"}},
		{args: []string{"echo", "{1}", ":::", "a", "b", ":::", "x"}, command: []string{"echo", "{1}"},
			sources: []Source{{Args: []string{"a", "b"}}, {Args: []string{"x"}}}},
		{args: []string{"echo", "::::", "f1", "f2", ":::", "a"}, command: []string{"echo"},
			sources: []Source{{Files: []string{"f1", "f2"}}, {Args: []string{"a"}}}},
		{args: []string{":::", "a"}, command: []string{}, sources: []Source{{Args: []string{"a"}}}},
		{args: []string{"echo", ":::"}, err: "::: or :::: with nothing after it: give items (::: a b c) or files of items (:::: items.txt)"},
		{args: []string{"echo", ":::", "a", "::::"}, err: "::: or :::: with nothing after it"},
	} {
		command, sources, err := SplitSources(tt.args)
		switch {
		case tt.err != "":
			if !errors.Is(err, ErrEmptySource) || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("SplitSources(%q) = %v, want ErrEmptySource %q", tt.args, err, tt.err)
			}
		case err != nil || !reflect.DeepEqual(command, tt.command) || !reflect.DeepEqual(sources, tt.sources):
			t.Errorf("SplitSources(%q) = %q, %+v, %v; want %q, %+v", tt.args, command, sources, err, tt.command, tt.sources)
		}
	}
}

func TestProduct(t *testing.T) {
	in := Product([][]string{{"a", "b"}, {"1", "2", "3"}})
	n := in.Count(context.Background(), ReadOptions{})
	b, err := io.ReadAll(in.R)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.NewReplacer("\x1f", "|", "\x00", ";").Replace(string(b))
	if want := "a|1;a|2;a|3;b|1;b|2;b|3;"; got != want || n != 6 || !in.Sources || !in.Countable() {
		t.Errorf("Product = %q, %d; want %q, 6", got, n, want)
	}
	in = Product([][]string{{"a"}, {}})
	if b, _ := io.ReadAll(in.R); len(b) != 0 || in.Count(context.Background(), ReadOptions{}) != 0 {
		t.Errorf("Product with an empty source = %q, %d; want nothing", b, n)
	}
}

// TestProductValuesKept reads Product's items back into the values given,
// whatever bytes they hold: a value with the unit separator Product puts
// between values was split in two ({1} {2} ::: $'a\x1fb' ::: c ran with
// "a" and "b", and "c" was lost).
func TestProductValuesKept(t *testing.T) {
	odd := []string{"a\x1fb", "\x1e", "\x1ef", "\x1e\x1f", "x\x1e\x1ey", "\x1f", "tab\tnl\n"}
	values := [][]string{odd, {"c", "\x1f\x1e"}}
	var got [][]string
	var texts []string
	err := Scan(Product(values).R, ReadOptions{NUL: true, Sources: true}, func(it runner.Item) error {
		if it.Err != nil {
			return it.Err
		}
		got, texts = append(got, it.Cols), append(texts, it.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]string
	for _, a := range values[0] {
		for _, b := range values[1] {
			want = append(want, []string{a, b})
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Product's items read back as columns %q, want %q", got, want)
	}
	for i, w := range want {
		if i < len(texts) && texts[i] != w[0]+" "+w[1] {
			t.Errorf("item %d text = %q, want %q", i+1, texts[i], w[0]+" "+w[1])
		}
	}
}

// TestSplitSourcesStdinTwice: stdin is read once, so a second :::: naming
// it got no items, and the run, a product with an empty source, ran
// nothing and exited 0.
func TestSplitSourcesStdinTwice(t *testing.T) {
	for _, args := range [][]string{
		{"echo", "::::", "-", "::::", "-"},
		{"echo", "::::", "-", "/dev/stdin"},
		{"echo", "::::", "/dev/stdin", ":::", "a", "::::", "/dev/fd/0"},
	} {
		if _, _, err := SplitSources(args); err == nil || !strings.Contains(err.Error(), "both read stdin") {
			t.Errorf("SplitSources(%q) = %v, want an error saying stdin is read twice", args, err)
		}
	}
	if _, _, err := SplitSources([]string{"echo", "::::", "-", ":::", "-"}); err != nil {
		t.Errorf("SplitSources(:::: - ::: -) = %v, want no error (the second - is an item)", err)
	}
}

// TestProductEmptyValuesKept: a value given after ::: is an item even
// when it is empty or blank. With one source such an item was dropped as
// a blank line would be, without a word (an empty value, a space and a:
// only a ran, and the count said 3), while with two sources they ran.
func TestProductEmptyValuesKept(t *testing.T) {
	for _, values := range [][][]string{
		{{"", " ", "\t", "a"}},
		{{"", " "}, {"", "b"}},
	} {
		in := Product(values)
		n := in.Count(context.Background(), ReadOptions{NUL: true, Sources: true})
		var got [][]string
		err := Scan(Product(values).R, ReadOptions{NUL: true, Sources: true}, func(it runner.Item) error {
			if it.Err != nil {
				return it.Err
			}
			got = append(got, it.Cols)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{{}}
		for _, vs := range values {
			var next [][]string
			for _, w := range want {
				for _, v := range vs {
					next = append(next, append(append([]string{}, w...), v))
				}
			}
			want = next
		}
		if !reflect.DeepEqual(got, want) || n != int64(len(want)) {
			t.Errorf("Product(%q) read back as %q, counted %d; want %q, %d", values, got, n, want, len(want))
		}
	}
}
