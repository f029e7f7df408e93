package joblog

import (
	"errors"
	"strings"
	"testing"
)

// repeating is an endless reader of one row again and again.
type repeating struct {
	row string
	n   int64 // bytes read
}

func (r *repeating) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], r.row[int(r.n+int64(n))%len(r.row):])
	}
	r.n += int64(n)
	return n, nil
}

// TestReadAtMostEndless: an endless job log (a pipe that never ends, as
// pace plot may be given) ends with ErrTooManyRows once past the cap,
// having read little more than the cap's rows; at the cap exactly, every
// row is read.
func TestReadAtMostEndless(t *testing.T) {
	const row = "1\t:\t1700000000.5\t0.1\t0\t0\t0\t0\tGET http://h/x\n"
	src := &repeating{row: row}
	_, err := ReadAtMost(src, 1000)
	if !errors.Is(err, ErrTooManyRows) || !strings.Contains(err.Error(), "more than 1000") {
		t.Errorf("ReadAtMost(endless rows, 1000) = %v, want too many rows: more than 1000", err)
	}
	if lim := int64(1001*len(row) + 256<<10); src.n > lim {
		t.Errorf("ReadAtMost(endless rows, 1000) read %d bytes, want at most %d", src.n, lim)
	}
	log, err := ReadAtMost(strings.NewReader(strings.Repeat(row, 5)), 5)
	if err != nil || len(log.Entries) != 5 {
		t.Errorf("ReadAtMost(5 rows, 5) = %d rows, %v; want 5 rows", len(log.Entries), err)
	}
}
