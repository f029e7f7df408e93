package osfiles

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestJobsFor(t *testing.T) {
	for _, tt := range []struct{ jobs, perJob, limit, want int }{
		{1000, 6, 1024, (1024 - Reserved) / 6},
		{100, 6, 1024, 100}, // room enough
		{8, 6, 64, 1},       // no room at all: still one job
		{8, 6, 10, 1},
		{100_000, 0, 1 << 20, 100_000}, // a job that holds no descriptor
	} {
		if got := JobsFor(tt.jobs, tt.perJob, tt.limit); got != tt.want {
			t.Errorf("JobsFor(%d, %d, %d) = %d, want %d", tt.jobs, tt.perJob, tt.limit, got, tt.want)
		}
	}
}

func TestReopenedNull(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no descriptors reused this way")
	}
	open := func(name string, flag int) *os.File {
		t.Helper()
		f, err := os.OpenFile(name, flag, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, tt := range []struct {
		f    *os.File
		want bool
	}{
		{open(os.DevNull, os.O_RDWR), true},    // as the runtime reopens a closed descriptor
		{open(os.DevNull, os.O_WRONLY), false}, // > /dev/null
		{open(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE), false},
	} {
		if got := ReopenedNull(int(tt.f.Fd())); got != tt.want {
			t.Errorf("ReopenedNull(%s) = %v, want %v", tt.f.Name(), got, tt.want)
		}
	}
}
