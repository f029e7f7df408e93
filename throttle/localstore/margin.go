package localstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// Margins. Every process records its margin in the meta bucket, under
// "margin:" + its id, as 16 bytes: the margin and the instant (store
// time) until which it stays in force, both ns, big-endian. A call
// admitted a window after another must reach the server a window after
// it, so the margin that protects the pair is the wider of the two
// processes' margins; every transaction widens the windows by the widest
// margin in force, which covers every pair. A process's margin stays in
// force as long as a call it admitted can count: its longest window plus
// the margin, from its latest admission or publication. A process with a
// fixed margin (Options.FixedMargin) keeps it under "margin:~" + the
// margin in ns, shared with every process of that margin: each write of
// it ends later (store time only grows, and a write keeps the later end
// anyway), and none lowers it.
var keyMarginPrefix = []byte("margin:")

// marginKey returns the key this store keeps its margin own under.
func (s *Store) marginKey(own time.Duration) []byte {
	if s.cf.FixedMargin {
		return fmt.Appendf(bytes.Clone(keyMarginPrefix), "~%d", int64(own))
	}
	return append(bytes.Clone(keyMarginPrefix), s.id...)
}

// fleetMargin returns the widest margin in force in meta at now, own
// included, and deletes the entries that have expired. With until > now
// it first records own for this store until then.
func (s *Store) fleetMargin(m *bbolt.Bucket, own time.Duration, now, until int64) (time.Duration, error) {
	mine := s.marginKey(own)
	widest := own
	var gone [][]byte
	c := m.Cursor()
	for k, v := c.Seek(keyMarginPrefix); k != nil && bytes.HasPrefix(k, keyMarginPrefix); k, v = c.Next() {
		if bytes.Equal(k, mine) {
			// A fixed margin's entry, shared: it never ends sooner.
			if s.cf.FixedMargin && len(v) == 16 {
				until = max(until, int64(binary.BigEndian.Uint64(v[8:])))
			}
			continue
		}
		if len(v) != 16 || int64(binary.BigEndian.Uint64(v[8:])) <= now {
			gone = append(gone, bytes.Clone(k))
			continue
		}
		widest = max(widest, time.Duration(binary.BigEndian.Uint64(v[:8])))
	}
	for _, k := range gone {
		if err := m.Delete(k); err != nil {
			return 0, err
		}
	}
	if until > now {
		var v [16]byte
		binary.BigEndian.PutUint64(v[:8], uint64(own))
		binary.BigEndian.PutUint64(v[8:], uint64(until))
		if err := m.Put(mine, v[:]); err != nil {
			return 0, err
		}
	}
	return widest, nil
}

// inForce returns how long after now this store's margin own stays in
// force: the longest window, one counter bucket included, plus own.
func (s *Store) inForce(own time.Duration) int64 {
	var longest int64
	for j, r := range s.ly.sorted {
		w := int64(r.Window)
		if s.ly.counter[j] {
			w += counterWidth(int64(r.Window))
		}
		longest = max(longest, w)
	}
	return longest + int64(own)
}

// Publish records this store's margin own at once, so that the other
// processes widen their windows before this one next admits a call, and
// returns the widest margin in force; it implements gate.Store.
func (ss *storeSide) Publish(ctx context.Context, own time.Duration) (time.Duration, error) {
	s := (*Store)(ss)
	var fleet time.Duration
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		m := tx.Bucket(metaBucket)
		if m == nil {
			return errRefused // nothing to protect yet
		}
		now := advance(getInt(m, keyLast), getInt(m, keyWall), time.Now().UnixNano())
		var err error
		fleet, err = s.fleetMargin(m, own, now, now+s.inForce(own))
		return err
	})
	if errors.Is(err, errRefused) {
		return own, nil
	}
	return fleet, err
}
