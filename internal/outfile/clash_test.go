package outfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClash(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "sub", "..", "new.json")
	for _, tt := range []struct {
		name string
		uses []Use
		a, b string // the clashing pair's What; "" for none
	}{
		{"an output over the input", []Use{{"-a", in, false}, {"--joblog", in, true}}, "-a", "--joblog"},
		{"through a link", []Use{{"-a", link, false}, {"-o", in, true}}, "-a", "-o"},
		{"a file not yet there, spelled twice", []Use{{"--joblog", filepath.Join(dir, "new.json"), true}, {"--summary-file", missing, true}}, "--joblog", "--summary-file"},
		{"two inputs may share a file", []Use{{"::::", in, false}, {"::::", in, false}}, "", ""},
		{"a device takes any number", []Use{{"-o", "/dev/null", true}, {"--summary-file", "/dev/null", true}}, "", ""},
		{"stdin and stdout are not files", []Use{{"-a", "-", false}, {"-o", "-", true}, {"--joblog", "", true}}, "", ""},
	} {
		a, b, found := Clash(tt.uses)
		if found != (tt.a != "") || a.What != tt.a || b.What != tt.b {
			t.Errorf("%s: Clash = %q, %q, %v; want %q, %q", tt.name, a.What, b.What, found, tt.a, tt.b)
		}
	}
}
