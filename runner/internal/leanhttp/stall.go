package leanhttp

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/runner/internal/rawconn"
)

// Cutting off a client that takes none of its answer.
//
// A client that stops reading (its receive window full) blocks the write
// of its answer for as long as it does: the handler's write, or the
// loop's once the handler has returned, or net/http's on a connection
// handed to it. With Server.WriteIdleTimeout set, the watcher (watch.go)
// looks at every connection with a write in progress, the loop's and
// those handed to HTTP (a websocket's, once hijacked, included), and
// fails a write that has not returned after WriteIdleTimeout through the
// connection's write deadline: the writer gets an error, as for a client
// gone, the request's context is cancelled, and the connection is
// closed. On Linux a write's progress is seen as it goes (the bytes its
// client has acknowledged, rawconn.Acked), so only a client that takes
// not one byte for WriteIdleTimeout is cut off: as finely as the kernel
// tells, since a client whose receive window is full acknowledges more
// only once it has read a segment, or a sixteenth of its buffer, so a
// reader slower than that per WriteIdleTimeout looks stalled. A stall is
// seen within two WriteIdleTimeouts. Elsewhere a write counts as progress
// once it returns whole
// (at most the handler's write, or the 4 KiB of a buffer). No deadline is
// moved for a write that does not stall: a write costs two atomic
// additions, and a write the watcher finds in progress a system call
// (rawconn.Acked) when first seen and once every WriteIdleTimeout.

// writeWatch counts a connection's writes, for the watcher. Writes to a
// connection come one at a time (a second write begun before the first
// returned would hide both from the watcher, never cut one short).
type writeWatch struct {
	seq     atomic.Uint32 // incremented as a write begins and as it returns: odd while one is in progress
	stalled atomic.Bool   // the watcher cut a write off
	// The watcher's, under Server.mu: the write in progress it saw last,
	// the bytes the client had acknowledged then, and when.
	seen      uint32
	seenAcked uint64
	seenAt    time.Duration
}

// writeWatchKey is the context key of a request's connection's writeWatch.
type writeWatchKey struct{}

// WriteStalled reports whether a write to the client of the request whose
// context ctx is, or derives from, was cut off because the client took
// none of it for Server.WriteIdleTimeout.
func WriteStalled(ctx context.Context) bool {
	w, _ := ctx.Value(writeWatchKey{}).(*writeWatch)
	return w != nil && w.stalled.Load()
}

// lookWrite looks at w, the writes of c, and cuts off the one in
// progress if it has been so for WriteIdleTimeout; it reports whether a
// write is in progress. Requires s.mu held.
func (s *Server) lookWrite(w *writeWatch, c net.Conn, now time.Duration) bool {
	seq := w.seq.Load()
	if seq&1 == 0 {
		return false
	}
	if seq != w.seen {
		w.seen, w.seenAt = seq, now
		w.seenAcked, _ = rawconn.Acked(c)
		return true
	}
	if now-w.seenAt < s.WriteIdleTimeout {
		return true
	}
	if acked, ok := rawconn.Acked(c); ok && acked != w.seenAcked {
		w.seenAcked, w.seenAt = acked, now // slow, not stalled
		return true
	}
	if w.stalled.CompareAndSwap(false, true) {
		c.SetWriteDeadline(aLongTimeAgo)
	}
	return true
}

// trackHanded adds h, a connection handed to HTTP, to those the watcher
// looks at (or removes it).
func (s *Server) trackHanded(h *handedConn, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.handed, h)
		return
	}
	s.handed[h] = struct{}{}
}

// Write writes p, watched (see above) if the server cuts stalled writes.
func (h *handedConn) Write(p []byte) (int, error) {
	if h.s == nil {
		return h.Conn.Write(p)
	}
	h.watch.seq.Add(1)
	if !h.s.watching.Load() {
		h.s.startWatching()
	}
	n, err := h.Conn.Write(p)
	h.watch.seq.Add(1)
	return n, err
}

// Close closes the connection; the watcher forgets it.
func (h *handedConn) Close() error {
	if h.s != nil {
		h.s.trackHanded(h, false)
	}
	return h.Conn.Close()
}
