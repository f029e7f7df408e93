package localstore

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// slotSet is this process's side of a quota's cap on calls in flight:
// slot i is the file DIR/NAME.slots/<i>, held by whoever holds an
// exclusive lock on it. The kernel releases the lock when its holder
// dies, so a slot whose holder was killed is free at once, with no lease
// to wait out. A holder writes who it is into the file (see holderInfo)
// for Inspect, and empties it before it lets go. The files are opened
// once and kept open for the Store's life. It is safe for concurrent use.
type slotSet struct {
	dir  string
	root *os.Root    // dir, opened once (see newSlotSet)
	perm os.FileMode // of the slot files (permIn)

	mu    sync.Mutex // held for a pass over the slots, a release, or close
	files []*os.File // slot i's file, nil until tried and after a release
	busy  []bool     // slot i is held by this process
}

// newSlotSet opens dir, the slot directory mkdirShared made, for n slots.
// The directory is opened once, and checked to be the one at dir (not a
// link), and every slot file is opened in it: a link that someone else
// who may write the state directory puts in dir's place later leads
// nowhere, and a link inside it cannot lead out of it (os.Root).
func newSlotSet(dir string, n int) (*slotSet, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	in, err := root.Stat(".")
	if err == nil {
		var at os.FileInfo
		if at, err = os.Lstat(dir); err == nil && !os.SameFile(in, at) {
			err = notAFile(dir, at.Mode())
			if at.IsDir() {
				err = fmt.Errorf("%s was replaced while pace opened it", dir)
			}
		}
	}
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	perm, _ := permFor(in.Mode())
	return &slotSet{dir: dir, root: root, perm: perm, files: make([]*os.File, n), busy: make([]bool, n)}, nil
}

// slotPath returns the file of slot i.
func slotPath(dir string, i int) string { return filepath.Join(dir, strconv.Itoa(i)) }

// tryTake takes the lowest slot free across every process, without
// waiting, and returns it, or -1 if all are held. Requires the slot turn
// held (one pass at a time).
func (ss *slotSet) tryTake(opened time.Time) (int, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.files == nil {
		return -1, throttle.ErrClosed
	}
	for i, f := range ss.files {
		if ss.busy[i] {
			continue
		}
		if f == nil {
			var err error
			if f, err = ss.open(i); err != nil {
				return -1, err
			}
			ss.files[i] = f
		}
		ok, err := tryLock(f, true)
		if err != nil {
			return -1, err
		}
		if !ok {
			continue
		}
		ss.busy[i] = true
		// Who holds it is for people to read: a failure to say so does
		// not make the slot less held.
		info := holderInfo{PID: os.Getpid(), Started: opened, Since: time.Now()}.String()
		if f.Truncate(0) == nil {
			_, _ = f.WriteAt([]byte(info), 0)
		}
		return i, nil
	}
	return -1, nil
}

// open opens slot i's file in the slot directory, as openShared opens a
// file: a regular file only, the group's bits given where it is shared.
func (ss *slotSet) open(i int) (*os.File, error) {
	name := strconv.Itoa(i)
	f, err := ss.root.OpenFile(name, os.O_RDWR|os.O_CREATE|openFlags, ss.perm)
	if err != nil {
		if fi, lerr := ss.root.Lstat(name); lerr == nil && !fi.Mode().IsRegular() {
			return nil, notAFile(slotPath(ss.dir, i), fi.Mode())
		}
		// The root's error names the file in the directory ("openat 0"):
		// the user is told its path.
		if pe, ok := err.(*fs.PathError); ok {
			err = &fs.PathError{Op: "open", Path: slotPath(ss.dir, i), Err: pe.Err}
		}
		return nil, err
	}
	if err := regular(f, slotPath(ss.dir, i)); err != nil {
		return nil, err
	}
	sharePerm(f, ss.perm)
	return f, nil
}

// file returns slot i's file, if this process holds the slot.
func (ss *slotSet) file(i int) *os.File {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if i < 0 || i >= len(ss.files) || !ss.busy[i] {
		return nil
	}
	return ss.files[i]
}

// release gives slot i back: empties its file, unlocks it and closes it.
// The next take of the slot opens the file again: a job given this open
// file (SlotFile) may have left something running that still holds it,
// and the lock belongs to the open file, whoever holds it, so that taking
// the slot on it again would let that leftover hold the next call's slot
// after this process dies.
func (ss *slotSet) release(i int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.files == nil || !ss.busy[i] {
		return
	}
	f := ss.files[i]
	_ = f.Truncate(0)
	_ = unlock(f)
	_ = f.Close()
	ss.files[i], ss.busy[i] = nil, false
}

// close releases every slot held and closes the files.
func (ss *slotSet) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i, f := range ss.files {
		if f == nil {
			continue
		}
		if ss.busy[i] {
			_ = f.Truncate(0)
		}
		_ = f.Close() // releases the lock
	}
	_ = ss.root.Close()
	ss.files, ss.busy = nil, nil
}

// TrySlot takes the lowest slot free across every process, without
// waiting, or says to try again after the poll interval; it implements
// gate.Store.
func (ss *storeSide) TrySlot(context.Context, uint64) (any, bool, time.Duration, error) {
	s := (*Store)(ss)
	i, err := s.slots.tryTake(s.opened)
	if err != nil {
		s.failures.Add(1)
		if err == throttle.ErrClosed {
			return nil, false, 0, err
		}
		return nil, false, 0, fmt.Errorf("localstore: quota %q: slot: %w: %w", s.key, throttle.ErrBackend, err)
	}
	if i < 0 {
		return nil, false, s.cf.slotPoll, nil
	}
	return i, true, 0, nil
}

// ReleaseSlot gives back slot i, at once (a lock on a local file); it
// implements gate.Store.
func (ss *storeSide) ReleaseSlot(_ context.Context, slot any) { ss.slots.release(slot.(int)) }

// holderInfo is what the holder of a slot writes into its file.
type holderInfo struct {
	PID     int
	Started time.Time // when the holder opened the quota
	Since   time.Time // when it took the slot
}

// String formats h as one line that parseHolder reads back.
func (h holderInfo) String() string {
	return fmt.Sprintf("pid=%d started=%d since=%d\n", h.PID, h.Started.UnixNano(), h.Since.UnixNano())
}

// parseHolder reads what holderInfo.String wrote; ok is false for
// anything else (an empty file: nobody said).
func parseHolder(s string) (h holderInfo, ok bool) {
	for f := range strings.FieldsSeq(s) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return holderInfo{}, false
		}
		switch k {
		case "pid":
			h.PID, ok = int(n), true
		case "started":
			h.Started = time.Unix(0, n)
		case "since":
			h.Since = time.Unix(0, n)
		}
	}
	return h, ok
}
