package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxItem is the default limit on one item's length. Linux refuses
// a single argument longer than 128 KiB anyway.
const DefaultMaxItem = 1 << 20

// ErrItemTooLong is wrapped by the error of an Item longer than the limit.
var ErrItemTooLong error = &permanentFailure{msg: "item too long"}

// ReadOptions say how ReadItems splits its input into items.
type ReadOptions struct {
	// NUL ends each item with a NUL byte instead of a newline. With
	// newlines, a '\r' before the '\n' is dropped too.
	NUL bool
	// MaxLen limits an item's length in bytes; a longer one becomes an
	// Item with an error wrapping ErrItemTooLong. 0 means DefaultMaxItem.
	MaxLen int
	// Skip, if set, drops the items for which it returns true. Empty items
	// are always dropped.
	Skip func(item string) bool
}

// ReadItems reads items from r and sends them on out, in order, until r
// ends, reading fails, or ctx is done. It does not close out. It returns
// the read error, if any (not io.EOF), or ctx's error.
//
// ReadItems streams: it reads an item only once the previous one has been
// taken from out, so that memory stays bounded on endless input.
func ReadItems(ctx context.Context, r io.Reader, opts ReadOptions, out chan<- Item) error {
	return scanItems(r, opts, func(it Item) error {
		select {
		case out <- it:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// CountItems returns the number of items ReadItems would send for r.
func CountItems(r io.Reader, opts ReadOptions) (int64, error) {
	var n int64
	err := scanItems(r, opts, func(Item) error { n++; return nil })
	return n, err
}

// scanItems calls yield for each item of r and stops at its first error.
func scanItems(r io.Reader, opts ReadOptions, yield func(Item) error) error {
	sep := byte('\n')
	if opts.NUL {
		sep = 0
	}
	maxLen := opts.MaxLen
	if maxLen <= 0 {
		maxLen = DefaultMaxItem
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // an item longer than the buffer, being assembled
	tooLong := false
	for {
		chunk, err := br.ReadSlice(sep)
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong {
				if len(long)+len(chunk) > maxLen {
					tooLong, long = true, nil
				} else {
					long = append(long, chunk...)
				}
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("runner: read items: %w", err)
		}
		eof := err != nil
		if !eof {
			chunk = chunk[:len(chunk)-1]
		}
		var text string
		if long != nil {
			text = string(append(long, chunk...))
			long = nil
		} else {
			text = string(chunk)
		}
		if !tooLong && len(text) > maxLen {
			tooLong = true
		}
		if sep == '\n' && len(text) > 0 && text[len(text)-1] == '\r' {
			text = text[:len(text)-1]
		}
		var it Item
		switch {
		case tooLong:
			it.Err = fmt.Errorf("%w: longer than %d bytes", ErrItemTooLong, maxLen)
			tooLong = false
		case text == "" || opts.Skip != nil && opts.Skip(text):
			if eof {
				return nil
			}
			continue
		default:
			it.Text = text
		}
		if err := yield(it); err != nil {
			return err
		}
		if eof {
			return nil
		}
	}
}
