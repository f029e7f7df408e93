// Package items reads pace's input: items separated by newlines or NUL
// bytes, streamed so that jobs start as items arrive and memory stays
// bounded on endless input.
package items

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/pace-cli/pace/runner"
)

// DefaultMaxItem is the default limit on one item's length. Linux refuses
// a single argument longer than 128 KiB anyway.
const DefaultMaxItem = 1 << 20

// ErrItemTooLong is wrapped by the error of an Item longer than the limit.
var ErrItemTooLong = runner.Permanent(errors.New("item too long"))

// ErrItemNUL is wrapped by the error of an item read by lines that holds a
// NUL byte: no command line can carry one (exec refuses it), and a job log
// row must not either.
var ErrItemNUL = runner.Permanent(errors.New("holds a NUL byte"))

// ReadOptions say how ReadItems splits its input into items.
type ReadOptions struct {
	// NUL ends each item with a NUL byte instead of a newline. With
	// newlines, a '\r' before the '\n' is dropped too.
	NUL bool
	// MaxLen limits an item's length in bytes; a longer one becomes an
	// Item with an error wrapping ErrItemTooLong. 0 means DefaultMaxItem.
	MaxLen int
	// Skip, if set, drops the items for which it returns true. Empty items
	// and items of only spaces and tabs are always dropped, but for
	// Sources: a value given after ::: is an item, whatever it holds.
	Skip func(item string) bool
	// ColSep, if set, splits each item into columns (runner.Item.Cols) at
	// every match, as GNU parallel's --colsep does.
	ColSep *regexp.Regexp
	// Sources says the items are Product's (its input's Sources): their
	// columns are the sources' values as given, and their text those
	// values joined by spaces. ColSep is not used then.
	Sources bool
}

// Read reads items from r and sends them on out, in order, until r
// ends, reading fails, or ctx is done. It does not close out. It returns
// the read error, if any (not io.EOF), or ctx's error.
//
// Read streams: it reads an item only once the previous one has been
// taken from out, so that memory stays bounded on endless input.
func Read(ctx context.Context, r io.Reader, opts ReadOptions, out chan<- runner.Item) error {
	return Scan(WithContext(ctx, r), opts, func(it runner.Item) error {
		select {
		case out <- it:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// WithContext returns a reader of r whose reads fail once ctx is done, so
// that input that yields nothing but skipped items (an endless run of
// blank lines) still stops. A read already blocked on a pipe or terminal
// is not woken.
func WithContext(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Count returns the number of items Read would send for r.
func Count(r io.Reader, opts ReadOptions) (int64, error) {
	var n int64
	err := Scan(r, opts, func(runner.Item) error { n++; return nil })
	return n, err
}

// Scan calls yield for each item of r, as Read would send it, and stops
// at yield's first error, which it returns.
func Scan(r io.Reader, opts ReadOptions, yield func(runner.Item) error) error {
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
			return fmt.Errorf("read items: %w", err)
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
		if eof && text == "" && !tooLong {
			return nil // the input ended with its last separator
		}
		var it runner.Item
		switch {
		case tooLong:
			it.Err = fmt.Errorf("%w: longer than %d bytes", ErrItemTooLong, maxLen)
			tooLong = false
		case !opts.Sources && strings.Trim(text, " \t") == "" || opts.Skip != nil && opts.Skip(text):
			if eof {
				return nil
			}
			continue
		case sep == '\n' && strings.IndexByte(text, 0) >= 0:
			quoted := strconv.Quote(text)
			if len(quoted) > 60 {
				quoted = quoted[:57] + "..."
			}
			it.Err = fmt.Errorf("item %s %w, which no command line can carry: remove it, or give NUL-separated items with -0", quoted, ErrItemNUL)
		default:
			it.Text = text
			switch {
			case opts.Sources:
				it.Cols = productCols(text)
				it.Text = strings.Join(it.Cols, " ")
			case opts.ColSep != nil:
				it.Cols = opts.ColSep.Split(text, -1)
			}
		}
		if err := yield(it); err != nil {
			return err
		}
		if eof {
			return nil
		}
	}
}
