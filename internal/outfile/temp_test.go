package outfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIsTempName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{".1.pace-0a1b2c3d.part", true},
		{".out.bin.pace-zzzzzzzz.part", true},
		{"..pace-00000000.part", false},       // no file's name in it
		{".1.pace-0a1b2c3.part", false},       // a token too short
		{".1.pace-0A1B2C3D.part", false},      // not the token's digits
		{".1.pace-0a1b2c3d.tmp", false},       // an older pace's name: its writer held no lock
		{"1.pace-0a1b2c3d.part", false},       // not hidden
		{".1.pace-0a1b2c3d.part.x", false},    // more after it
		{".1.pacee0a1b2c3d.part", false},      // not the mark
		{".notes.part", false},                // someone's own
		{".1.pace-0a1b2c3d0.part", false},     // a token too long
		{".x.pace-.pace-0a1b2c3d.part", true}, // a file called x.pace-
	}
	for _, tt := range tests {
		if got := isTempName(tt.name); got != tt.want {
			t.Errorf("isTempName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	dir := t.TempDir()
	for _, base := range []string{"1", "out.bin", strings.Repeat("é", 120), strings.Repeat("中", 85), strings.Repeat("a", 255)} {
		name := filepath.Base(tempName(dir, base))
		if !isTempName(name) || len(name) > 255 || len(name) < 255-3 && len(base) > 235 || !utf8.ValidString(name) {
			t.Errorf("tempName(%d bytes) = %q (%d bytes): want a temporary file's name, of 252 to 255 valid UTF-8 bytes for a long one", len(base), name, len(name))
		}
	}
}

// TestLongNameReplaced replaces a file whose name is near the 255 bytes
// a name may have: its temporary file's name, longer by its mark, was
// refused (ENAMETOOLONG), and the file could not be written at all.
func TestLongNameReplaced(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{strings.Repeat("a", 250), strings.Repeat("é", 125), strings.Repeat("中", 84)} {
		p := filepath.Join(dir, base)
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Skipf("this file system takes no name of %d bytes: %v", len(base), err)
		}
		if err := WriteFile(t.Context(), p, []byte("new")); err != nil {
			t.Errorf("WriteFile(a name of %d bytes) = %v", len(base), err)
		}
		if got := readFile(t, p); got != "new" {
			t.Errorf("content = %q, want %q", got, "new")
		}
	}
	if got := entries(t, dir); len(got) != 3 {
		t.Errorf("directory holds %q, want the three files", got)
	}
}

// TestNamedTempCommitAndAbort: a temporary file with a name (where files
// cannot be made without one) becomes the file, or goes, and leaves
// nothing else.
func TestNamedTempCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	for _, isNew := range []bool{true, false} {
		tmp, err := createNamed(dir, "f")
		if err != nil {
			t.Fatal(err)
		}
		tmp.f.WriteString("body")
		if err := tmp.commit(filepath.Join(dir, "f"), isNew); err != nil {
			t.Fatalf("commit = %v", err)
		}
		if got := readFile(t, filepath.Join(dir, "f")); got != "body" {
			t.Errorf("content = %q, want %q", got, "body")
		}
	}
	tmp, err := createNamed(dir, "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := tmp.remove(); err != nil {
		t.Errorf("remove = %v", err)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "f" {
		t.Errorf("directory holds %q, want only f", got)
	}
}
