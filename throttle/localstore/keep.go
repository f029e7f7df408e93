package localstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	"go.etcd.io/bbolt"
)

// A store file kept open between a process's transactions. Opening the
// bbolt file for each transaction and closing it after cost most of an
// admission: the mmap, and above all the munmap, which flushes the TLBs
// of every CPU that ran a thread of the process (docs/design.md). Where
// keepOpen holds, a process keeps the file open and mapped from one of
// its transactions to the next, under the same transaction lock, and
// makes what bbolt holds in memory true again before each:
//
//   - bbolt's flock on the file is let go between transactions (other
//     pace processes exclude each other by the transaction lock, and an
//     older pace opens the file afresh under it) and taken again, without
//     waiting, at the next; a program holding it sends the transaction
//     the slow way: close, and open with bbolt's own wait.
//   - the file at the path must still be the one kept open, whole (its
//     size covers every page its meta page names), and its meta pages,
//     read with pread and checked as bbolt checks them, must name no page
//     beyond what this process has mapped (mapped); else the file is
//     closed and opened afresh.
//   - if another process committed since (the valid meta page names
//     another transaction id or high-water page), bbolt's freelist in memory is stale: reloadFreelist reads it again
//     from the file, which leaves bbolt as a fresh open would.
//
// Nothing else bbolt keeps in memory outlives a transaction: the meta
// pages are read through the mapping at each transaction's start, and the
// file size from the file when it grows. The commits themselves are
// unchanged: pages, then the meta page, so a process killed at any point
// leaves the last meta page written whole, or the one before.
type keptDB struct {
	db       *bbolt.DB
	f        *os.File    // bbolt's descriptor of the file (Options.OpenFile)
	fi       os.FileInfo // the file kept open, to tell it from another at the path
	mapped   int64       // bbolt's mapping of the file is at least this long
	pageSize int64       // the store's page size, read when it was opened
	txid     uint64      // the file's transaction id after this process's last transaction
	pgid     uint64      // and its high-water page id
	buf      []byte      // for currentMeta
}

// metaSize is the length of a bbolt meta (version 2): magic, version,
// page size, flags, root bucket (16), freelist, high-water page id, txid,
// then its checksum, FNV-1a of the rest. It follows a page header of 16
// bytes at the start of pages 0 and 1.
const (
	pageHeader = 16
	metaSize   = 64
	boltMagic  = 0xED0CDAED
)

// currentMeta reads the valid meta page of the open file f whose pages
// are pageSize long into buf, as bbolt picks it: the higher transaction
// id among the two that pass their checks. It returns nil if neither
// does.
func currentMeta(f *os.File, pageSize int, buf *[]byte) ([]byte, error) {
	if n := pageSize + pageHeader + metaSize; len(*buf) != n {
		*buf = make([]byte, n)
	}
	b := *buf
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var best []byte
	for _, off := range []int{pageHeader, pageSize + pageHeader} {
		m := b[off : off+metaSize]
		if validMeta(m) && (best == nil || metaTxid(m) > metaTxid(best)) {
			best = m
		}
	}
	return best, nil
}

// metaPagesSound reports whether both meta pages in b, the start of a
// store file whose pages are pageSize long (as currentMeta reads it),
// are bbolt's: its magic number and version, whether or not the rest
// passes its checksum. A commit cut short in its meta page (a torn
// commit: TestKeptOpenTornCommit) leaves one that fails the checksum,
// and bbolt rightly takes the other, the last whole commit. Anything else
// over a meta page (garbage written over the file's first pages) is
// damage: bbolt would open the store as the other page's earlier state,
// and the quota would go back to it silently, to nothing recorded if
// that page is the one written at the store's creation.
func metaPagesSound(b []byte, pageSize int) bool {
	end := pageSize + pageHeader + metaSize
	return len(b) >= end && bboltMeta(b[pageHeader:pageHeader+metaSize]) && bboltMeta(b[pageSize+pageHeader:end])
}

// bboltMeta reports whether m starts as a bbolt meta of version 2 does.
func bboltMeta(m []byte) bool {
	ne := binary.NativeEndian
	return ne.Uint32(m[0:]) == boltMagic && ne.Uint32(m[4:]) == 2
}

func validMeta(m []byte) bool {
	if !bboltMeta(m) {
		return false
	}
	ne := binary.NativeEndian
	h := fnv.New64a()
	_, _ = h.Write(m[:metaSize-8])
	return h.Sum64() == ne.Uint64(m[metaSize-8:])
}

// metaTxid and metaPgid return a meta's transaction id and high-water
// page id (the first page past the file's used pages).
func metaTxid(m []byte) uint64 { return binary.NativeEndian.Uint64(m[48:]) }
func metaPgid(m []byte) uint64 { return binary.NativeEndian.Uint64(m[40:]) }

// reuse makes k ready for a write transaction, as above, and reports
// whether it is; if not, the caller closes it and opens the file afresh.
// The caller holds the transaction lock; on true, k also holds bbolt's
// flock on the file.
func (k *keptDB) reuse(p paths) (bool, error) {
	fi, err := os.Lstat(p.db)
	if err != nil || !os.SameFile(fi, k.fi) {
		return false, nil
	}
	if ok, err := tryLock(k.f, true); err != nil || !ok {
		return false, nil
	}
	ok := false
	defer func() {
		if !ok {
			_ = unlock(k.f)
		}
	}()
	// Nothing may touch the mapping before the file is known to cover
	// what is read of it: a page of the mapping past the end of the file
	// faults (SIGBUS). The file kept open had this process's last commit,
	// so one now shorter than its meta pages was cut short by hand: it is
	// damaged, not new.
	pageSize := k.pageSize
	if fi.Size() < 2*pageSize {
		return false, p.damaged(fmt.Sprintf("cut short to %d bytes while open", fi.Size()))
	}
	m, err := currentMeta(k.f, int(pageSize), &k.buf)
	if err != nil || m == nil {
		return false, err
	}
	if !metaPagesSound(k.buf, int(pageSize)) {
		return false, p.damaged("a meta page is not bbolt's")
	}
	if end := int64(metaPgid(m)) * pageSize; end > k.mapped || end > fi.Size() {
		return false, nil
	}
	if metaTxid(m) != k.txid || metaPgid(m) != k.pgid {
		// Another process committed: reload the freelist.
		if err := reloadFreelist(k.db); err != nil {
			return false, err
		}
	}
	ok = true
	return true, nil
}

// errReload is the panic with which reloadFreelist ends its transaction.
var errReload = errors.New("reload the freelist")

// reloadFreelist makes db's freelist in memory the one in the file, as
// its current meta page names it. bbolt does so when a write transaction
// fails in a way that leaves the memory unsure (a failed write or fsync),
// and when a panic ends one under DB.Update: its "physical" rollback
// reads the freelist page through the mapping, which shares the kernel's
// page cache with the other processes' writes. A plain Tx.Rollback does
// not. So this begins a write transaction and panics in it, having
// released this process's pending pages (Begin does, with no reader
// open): the freelist is then exactly the file's, as after an open.
func reloadFreelist(db *bbolt.DB) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if v != errReload {
				panic(v)
			}
			err = nil
		}
	}()
	return db.Update(func(*bbolt.Tx) error { panic(errReload) })
}

// committed notes what this process's transaction left: the file's
// transaction id and high-water page, and a mapping at least as long as
// the pages they name (bbolt maps more than it allocates).
func (k *keptDB) committed() bool {
	tx, err := k.db.Begin(false)
	if err != nil {
		return false
	}
	k.txid, k.pgid = uint64(tx.ID()), uint64(tx.Size())/uint64(k.pageSize)
	k.mapped = max(k.mapped, tx.Size())
	return tx.Rollback() == nil
}

// openKept opens the file at path for a write transaction, with bbolt's
// flock held, to be kept open after it.
func openKept(path string, o *bbolt.Options, perm os.FileMode) (*keptDB, error) {
	db, f, err := openBolt(path, perm, o)
	if err != nil {
		return nil, err
	}
	k := &keptDB{db: db, f: f, pageSize: int64(db.Info().PageSize)}
	if k.fi, err = k.f.Stat(); err != nil {
		_ = db.Close()
		return nil, err
	}
	// bbolt mapped at least the whole file.
	k.mapped = k.fi.Size()
	return k, nil
}

// release lets go of bbolt's flock at the end of a transaction.
func (k *keptDB) release() { _ = unlock(k.f) }

// close closes the file.
func (k *keptDB) close() error { return k.db.Close() }

// abandon gives up the file after bbolt panicked, perhaps holding its
// own locks, so that Close could wait forever: the descriptor is closed
// (which lets go of the flock) and the mapping left to the process's
// end.
func (k *keptDB) abandon() { _ = k.f.Close() }
