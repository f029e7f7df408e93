package runner

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestCaptureInMemory(t *testing.T) {
	c := NewCapture(100, t.TempDir())
	c.Write([]byte("hello "))
	c.Write([]byte("world\n"))
	if c.Spilled() {
		t.Error("Spilled() = true for 12 bytes under a 100-byte limit")
	}
	if got := string(c.Bytes()); got != "hello world\n" {
		t.Errorf("Bytes() = %q", got)
	}
	if c.Len() != 12 {
		t.Errorf("Len() = %d, want 12", c.Len())
	}
	c.Close()
}

func TestCaptureSpillsToFile(t *testing.T) {
	dir := t.TempDir()
	c := NewCapture(10, dir)
	var want bytes.Buffer
	for i := 0; i < 50; i++ {
		line := strings.Repeat(string(rune('a'+i%26)), i) + "\n"
		c.Write([]byte(line))
		want.WriteString(line)
	}
	if !c.Spilled() {
		t.Fatal("Spilled() = false past the limit")
	}
	if c.mem.Len() != 0 {
		t.Errorf("%d bytes still in memory after spilling", c.mem.Len())
	}
	// Unix: the file has no name while it holds the output, so a pace
	// killed outright leaves nothing in $TMPDIR; Windows removes no open
	// file.
	want1 := 0
	if runtime.GOOS == "windows" {
		want1 = 1
	}
	if files, _ := os.ReadDir(dir); len(files) != want1 {
		t.Fatalf("%d files in temp dir while the output is held, want %d", len(files), want1)
	}
	for i := 0; i < 2; i++ { // replayable
		var got bytes.Buffer
		if _, err := c.WriteTo(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("replay %d: got %d bytes, want %d, same content", i, got.Len(), want.Len())
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("temp file left after Close: %v", files)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestCaptureSpillFailureDropsQuietly(t *testing.T) {
	c := NewCapture(4, "/nonexistent/dir")
	n, err := c.Write([]byte("0123456789"))
	if n != 10 || err != nil {
		t.Errorf("Write = %d, %v; want 10, nil (never disturb the job)", n, err)
	}
	if c.Err() == nil {
		t.Error("Err() = nil after a failed spill")
	}
}

func TestNilCapture(t *testing.T) {
	var c *Capture
	if c.Len() != 0 || c.Close() != nil || c.Err() != nil || len(c.Bytes()) != 0 {
		t.Error("nil Capture should be empty")
	}
}
