package outfile

import (
	"os"
	"path/filepath"
	"testing"
)

// writeOwned writes data to name with WriteOwned, failing the test on error.
func writeOwned(t *testing.T, name, data string) *Owned {
	t.Helper()
	o, err := WriteOwned(t.Context(), name, []byte(data))
	if err != nil {
		t.Fatalf("WriteOwned(%s) = %v", name, err)
	}
	return o
}

// checkRemove calls o.Remove and checks what it reports.
func checkRemove(t *testing.T, o *Owned, want bool) {
	t.Helper()
	removed, err := o.Remove()
	if removed != want || err != nil {
		t.Errorf("Remove() = %v, %v; want %v, nil", removed, err, want)
	}
}

func TestOwnedRemoved(t *testing.T) {
	for _, old := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "port")
		if old { // a dead writer's, replaced
			if err := os.WriteFile(p, []byte("http://127.0.0.1:1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		o := writeOwned(t, p, "http://127.0.0.1:2\n")
		if got := readFile(t, p); got != "http://127.0.0.1:2\n" {
			t.Errorf("content = %q, want the URL written", got)
		}
		checkRemove(t, o, true)
		if got := entries(t, dir); len(got) != 0 {
			t.Errorf("after Remove, the directory holds %q, want nothing", got)
		}
		checkRemove(t, o, false) // once only
	}
}

func TestOwnedKeepsOthers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, p string)
		want   string // the content left; "" for no file
	}{
		{"replaced by another writer", func(t *testing.T, p string) {
			writeOwned(t, p, "http://127.0.0.1:3\n")
		}, "http://127.0.0.1:3\n"},
		{"rewritten in place", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("http://127.0.0.1:4\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "http://127.0.0.1:4\n"},
		{"rewritten in place, the same bytes plus one", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("x")
			f.Close()
		}, "http://127.0.0.1:2\nx"},
		{"replaced by a link to the file", func(t *testing.T, p string) {
			if err := os.Rename(p, p+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p+".real", p); err != nil {
				t.Fatal(err)
			}
		}, "http://127.0.0.1:2\n"},
		{"removed already", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "port")
			o := writeOwned(t, p, "http://127.0.0.1:2\n")
			tt.change(t, p)
			checkRemove(t, o, false)
			b, err := os.ReadFile(p)
			if tt.want == "" {
				if !os.IsNotExist(err) {
					t.Errorf("after Remove, port holds %q, %v; want nothing", b, err)
				}
				return
			}
			if string(b) != tt.want || err != nil {
				t.Errorf("after Remove, port holds %q, %v; want %q", b, err, tt.want)
			}
		})
	}
}

func TestOwnedThroughLink(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real"), filepath.Join(dir, "port")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	o := writeOwned(t, link, "u\n")
	checkRemove(t, o, true)
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the link is gone: %v; want it kept", err)
	}
	if _, err := os.Lstat(real); !os.IsNotExist(err) {
		t.Errorf("Lstat(real) = %v, want it removed", err)
	}
}

func TestOwnedDevice(t *testing.T) {
	o := writeOwned(t, os.DevNull, "u\n")
	if o != nil {
		t.Errorf("WriteOwned(%s) = %+v, want nil: nothing to remove", os.DevNull, o)
	}
	checkRemove(t, o, false)
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Errorf("%s: %v", os.DevNull, err)
	}
}

// TestOwnedPutBack replaces the file between Remove's look and its
// rename (take), as the race it guards against would: the file taken is
// put back.
func TestOwnedPutBack(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "port")
	o := writeOwned(t, p, "mine\n")
	if !o.isMine(p) {
		t.Fatalf("isMine(%s) = false just after WriteOwned", p)
	}
	writeOwned(t, p, "theirs\n")
	removed, err := o.take()
	if removed || err != nil {
		t.Errorf("take() = %v, %v; want false, nil", removed, err)
	}
	if got := readFile(t, p); got != "theirs\n" {
		t.Errorf("port holds %q, want theirs put back", got)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("the directory holds %q, want only port", got)
	}
}
