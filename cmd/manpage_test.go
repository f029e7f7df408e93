package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Release archives carry a man page per command and completions.
func TestGenDocs(t *testing.T) {
	ios, _, _, _ := Test()
	dir := t.TempDir()
	if code := Execute(&Factory{IOStreams: ios}, []string{"gen-docs", "--man", dir + "/man", "--completions", dir + "/comp"}); code != 0 {
		t.Fatalf("gen-docs exit %d", code)
	}
	page, err := os.ReadFile(filepath.Join(dir, "man", "pace-run.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH \"PACE-RUN\" 1", ".SH NAME\npace-run \\- Run a command per input item", ".B \\-r, \\-\\-rate", ".SH EXAMPLES"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("pace-run.1 lacks %q", want)
		}
	}
	for _, f := range []string{"pace.bash", "_pace", "pace.fish"} {
		if fi, err := os.Stat(filepath.Join(dir, "comp", f)); err != nil || fi.Size() == 0 {
			t.Errorf("completion %s: %v", f, err)
		}
	}
}
