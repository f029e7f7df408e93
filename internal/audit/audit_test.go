package audit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
)

func TestMedian(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, tt := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{ms(7), 7 * time.Millisecond},
		{ms(9, 1, 5), 5 * time.Millisecond},
		{ms(4, 1, 2, 100), 3 * time.Millisecond},
	} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// endless is a reader that never ends: it repeats unit for ever and
// counts the bytes it gave.
type endless struct {
	unit []byte
	off  int
	n    int64
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.unit[e.off]
		e.off = (e.off + 1) % len(e.unit)
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestAuditEndlessInput: pace audit reads any input, however long, in
// bounded memory and ends with a clear error: bytes without a line break
// (/dev/zero) stop at the line cap, endless valid lines at the call cap,
// each after reading no more than the cap (and a buffer) beyond it.
func TestAuditEndlessInput(t *testing.T) {
	const buffer = 256 << 10
	zero := &endless{unit: []byte{0}}
	_, err := Read(zero, 1000)
	var le *joblog.LineError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "line longer than 4 MiB") {
		t.Errorf("Read(endless NULs) = %v, want a line error: line longer than 4 MiB", err)
	}
	if zero.n > joblog.MaxLine+buffer {
		t.Errorf("Read(endless NULs) read %d bytes, want at most %d: the line cap must stop it", zero.n, joblog.MaxLine+buffer)
	}

	for _, unit := range []string{"1700000000.25\n", "1\t:\t1700000000.5\t0.1\t0\t0\t0\t0\techo 1\n"} {
		lines := &endless{unit: []byte(unit)}
		const max = 1000
		_, err := Read(lines, max)
		if !errors.Is(err, ErrTooManyCalls) || !strings.Contains(err.Error(), "more than 1000") {
			t.Errorf("Read(endless %q) = %v, want too many calls: more than 1000", unit, err)
		}
		if lim := int64((max+1)*len(unit) + buffer); lines.n > lim {
			t.Errorf("Read(endless %q) read %d bytes, want at most %d: the call cap must stop it", unit, lines.n, lim)
		}
	}

	// At the cap exactly, the calls are read.
	c, err := Read(strings.NewReader(strings.Repeat("1700000000.25\n", 5)), 5)
	if err != nil || len(c.Times) != 5 || c.Format != FormatTimestamps {
		t.Errorf("Read(5 timestamps, cap 5) = %+v, %v; want 5 timestamps", c, err)
	}
}

// TestAuditTooManyCalls: the user reads one line saying what the cap is
// and what to do.
func TestAuditTooManyCallsMessage(t *testing.T) {
	_, err := Read(&endless{unit: []byte("1700000000.25\n")}, 3)
	want := "too many calls: more than 3, the most pace audit reads; audit the file in parts (split -l 3)"
	if err == nil || err.Error() != want {
		t.Errorf("Read(endless, cap 3) = %v, want %q", err, want)
	}
}

// A negative JobRuntime (a wall clock stepped back during the job) counts
// as a job of no time, never as a negative median; a negative Send or
// Receive is refused, naming the field.
func TestReadNegativeFields(t *testing.T) {
	row := func(runtime, send string) string {
		return joblog.Header + "\n1\t:\t1700000000.000000\t" + runtime + "\t" + send + "\t0\t0\t0\tx\n"
	}
	c, err := Read(strings.NewReader(row("-100.000", "0")), 10)
	if err != nil || len(c.Runtimes) != 1 || c.Runtimes[0] != 0 {
		t.Errorf("Read(JobRuntime -100) = %+v, %v; want one runtime of 0", c, err)
	}
	for send, want := range map[string]string{"-9": `Send "-9" must be at least 0`, "99999999999999999999": `Send "99999999999999999999" is out of range`} {
		if _, err := Read(strings.NewReader(row("1.000", send)), 10); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(Send %s) error = %v, want %q", send, err, want)
		}
	}
}
