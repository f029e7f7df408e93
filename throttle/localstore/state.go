package localstore

import (
	"encoding/binary"

	"go.etcd.io/bbolt"
)

// The store file is one bbolt database. Its "meta" bucket holds:
//
//	version   the format version (formatVersion), 8 bytes big-endian
//	spec      the rule spec of the processes keeping the quota (layout.spec)
//	last      the latest instant at which a call was recorded, ns
//	wall      the host's clock when it was recorded, ns (see advance)
//	serial    the id of the latest call recorded
//	expires   the instant from which every rule's state has left its window
//	margin:ID the margin of the process with that id, while in force (margin.go)
//	synced    the instant of the latest admission that waited for the disk, ns (crash.go)
//	boot      the id of the host's boot in which the store was last written (crash.go)
//
// and each rule, in store order, has a bucket named "r<j>:<rule>", with
// ":counter" appended for a counter (layout.bucketName), that holds the
// weight it holds under the key "s" and either
//
//   - a log: one key per call still in the window, 'e' + the instant
//     (8 bytes, big-endian with the sign bit flipped, so keys sort by
//     time) + the call's id (8 bytes), and as value its cost in a cost
//     rule (uvarint), nothing in a count rule; or
//   - a counter: one key per bucket of width g = ceil(window/1024) that
//     still overlaps the window, 'b' + the bucket's index (8 bytes, as
//     above), and as value the weight recorded in it (uvarint). The oldest
//     bucket, partly outside the window, counts whole, as in throttle's
//     counter and redisrate's Lua: the sum can only overstate.
//
// Every transaction that records a call first drops what has left the
// window, so a log never holds more than N keys and a counter no more
// than about 1026 buckets (plus margin/g).
var (
	metaBucket = []byte("meta")
	keyVersion = []byte("version")
	keySpec    = []byte("spec")
	keyLast    = []byte("last")
	keyWall    = []byte("wall")
	keySerial  = []byte("serial")
	keyExpires = []byte("expires")
	keySum     = []byte("s")
)

// formatVersion is the version of the store's format that this code
// writes. A store with a newer version is refused, never rewritten.
const formatVersion = 1

const (
	prefixEntry  = 'e'
	prefixBucket = 'b'
)

// counterBuckets is how many buckets a counter splits its window into, as
// in package throttle.
const counterBuckets = 1024

func getInt(b *bbolt.Bucket, k []byte) int64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func putInt(b *bbolt.Bucket, k []byte, v int64) error {
	return b.Put(k, binary.BigEndian.AppendUint64(nil, uint64(v)))
}

// stateKey returns prefix + t (sortable) + id.
func stateKey(prefix byte, t int64, id uint64) []byte {
	k := make([]byte, 0, 17)
	k = append(k, prefix)
	k = binary.BigEndian.AppendUint64(k, uint64(t)^1<<63)
	if prefix == prefixEntry {
		k = binary.BigEndian.AppendUint64(k, id)
	}
	return k
}

// keyTime returns the instant (or bucket index) of a state key.
func keyTime(k []byte) int64 { return int64(binary.BigEndian.Uint64(k[1:9]) ^ 1<<63) }

func uvarint(v []byte) int64 {
	n, _ := binary.Uvarint(v)
	return int64(n)
}

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// counterWidth returns the bucket width of a counter for a rule of the
// given window: it depends on the rule alone, not on the margin, so that
// processes with different margins read the buckets alike.
func counterWidth(window int64) int64 { return max((window+counterBuckets-1)/counterBuckets, 1) }

// ruleState is one rule's state in a transaction.
type ruleState struct {
	b    *bbolt.Bucket // nil: nothing stored (read-only transactions)
	n    int64
	w    int64 // window plus margin, ns
	g    int64 // bucket width of a counter; 0 for a log
	cost bool  // a call weighs its cost, not 1
}

func (r ruleState) prefix() byte {
	if r.g > 0 {
		return prefixBucket
	}
	return prefixEntry
}

// weight returns what a log entry or a bucket with value v weighs.
func (r ruleState) weight(v []byte) int64 {
	if r.g == 0 && !r.cost {
		return 1
	}
	return uvarint(v)
}

// held returns the weight stored, without dropping anything.
func (r ruleState) held() int64 {
	if r.b == nil {
		return 0
	}
	return getInt(r.b, keySum)
}

// first returns the key from which the window (now-w, now] begins: the
// first entry after now-w, or the first bucket that overlaps the window.
func (r ruleState) first(now int64) []byte {
	if r.g > 0 {
		return stateKey(prefixBucket, floorDiv(now-r.w+1, r.g), 0)
	}
	return stateKey(prefixEntry, now-r.w+1, 0)
}

// expired returns the keys that have left the window at now, oldest
// first, and their weight.
func (r ruleState) expired(now int64) ([][]byte, int64) {
	if r.b == nil {
		return nil, 0
	}
	end := r.first(now)
	var keys [][]byte
	var gone int64
	c := r.b.Cursor()
	for k, v := c.Seek([]byte{r.prefix()}); k != nil && k[0] == r.prefix(); k, v = c.Next() {
		if string(k) >= string(end) {
			break
		}
		keys = append(keys, append([]byte(nil), k...))
		gone += r.weight(v)
	}
	return keys, gone
}

// heldAt returns the weight in the window at now, without dropping
// anything.
func (r ruleState) heldAt(now int64) int64 {
	_, gone := r.expired(now)
	return max(r.held()-gone, 0)
}

// trim drops what has left the window at now and returns the weight the
// rule holds.
func (r ruleState) trim(now int64) (int64, error) {
	keys, gone := r.expired(now)
	held := r.held()
	if len(keys) == 0 {
		return held, nil
	}
	for _, k := range keys {
		if err := r.b.Delete(k); err != nil {
			return 0, err
		}
	}
	held -= gone
	if k, _ := r.b.Cursor().Seek([]byte{r.prefix()}); held < 0 || k == nil || k[0] != r.prefix() {
		held = 0
	}
	return held, putInt(r.b, keySum, held)
}

// delay returns how long after now a call of weight c fits, 0 if it fits
// now, given the weight held in the window.
func (r ruleState) delay(now, held, c int64) int64 {
	excess := held + c - r.n
	if excess <= 0 {
		return 0
	}
	if r.b == nil {
		return 1 // unreachable: nothing held
	}
	cur := r.b.Cursor()
	if r.g == 0 {
		// The oldest calls whose weights add up to excess must leave.
		var gone int64
		for k, v := cur.Seek(r.first(now)); k != nil && k[0] == prefixEntry; k, v = cur.Next() {
			if gone += r.weight(v); gone >= excess {
				return max(keyTime(k)+r.w-now, 1)
			}
		}
		return 1
	}
	// Drop buckets oldest first until the call fits; bucket j stops
	// overlapping the window at (j+1)*g + w - 1.
	left := held
	for k, v := cur.Seek(r.first(now)); k != nil && k[0] == prefixBucket; k, v = cur.Next() {
		if left -= r.weight(v); left+c <= r.n {
			return max((keyTime(k)+1)*r.g+r.w-1-now, 1)
		}
	}
	return 1
}

// record adds a call of weight c, id id, at now; held is the weight held
// before it.
func (r ruleState) record(now int64, id uint64, c, held int64) error {
	var k, v []byte
	if r.g == 0 {
		k = stateKey(prefixEntry, now, id)
		if r.cost {
			v = binary.AppendUvarint(nil, uint64(c))
		} else {
			v = []byte{}
		}
	} else {
		k = stateKey(prefixBucket, floorDiv(now, r.g), 0)
		v = binary.AppendUvarint(nil, uint64(uvarint(r.b.Get(k))+c))
	}
	if err := r.b.Put(k, v); err != nil {
		return err
	}
	return putInt(r.b, keySum, held+c)
}

// adjust changes the weight of the call id, recorded at at, from from to
// to, if the rule still holds it, and returns the weight held. It
// requires a cost rule, trimmed at now.
func (r ruleState) adjust(at int64, id uint64, from, to int64) (int64, error) {
	held := r.held()
	if r.g == 0 {
		k := stateKey(prefixEntry, at, id)
		v := r.b.Get(k)
		if v == nil {
			return held, nil // already left the window
		}
		held += to - r.weight(v)
		if err := r.b.Put(k, binary.AppendUvarint(nil, uint64(to))); err != nil {
			return 0, err
		}
	} else {
		k := stateKey(prefixBucket, floorDiv(at, r.g), 0)
		v := r.b.Get(k)
		if v == nil {
			return held, nil
		}
		old := uvarint(v)
		d := max(to-from, -old)
		held += d
		if err := r.b.Put(k, binary.AppendUvarint(nil, uint64(old+d))); err != nil {
			return 0, err
		}
	}
	held = max(held, 0)
	return held, putInt(r.b, keySum, held)
}

// advance returns the store's instant for a transaction that reads clock
// on the host's wall clock, given the latest instant recorded and the
// clock's reading then. Normally that is the clock. Once the clock has
// stepped back behind the latest instant recorded, the store's time does
// not follow it back: it runs on from there at half the clock's speed
// until the clock catches up, 2D after a step of D. Its time never runs
// faster than the clock, so no window of real time holds more calls than
// the same window of store time, and it never stops, so no admission
// stalls for the length of the step; waits meanwhile take up to twice as
// long.
func advance(last, wall, clock int64) int64 {
	if clock >= last {
		return clock
	}
	return last + max(clock-wall, 0)/2
}
