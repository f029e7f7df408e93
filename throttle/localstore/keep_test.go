//go:build unix

package localstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
)

// Each Store keeps the store file open between its transactions (on
// Linux). Several Stores of one quota in one process lock and map the
// file as separate processes do, so these tests play a fleet whose
// members take turns at random: each must see the others' commits (a
// stale freelist in memory would hand out pages another member's tree
// uses), follow the file as it grows past what it mapped, and leave a
// store that bbolt's own check finds whole, with no rule exceeded.
func TestKeptOpenTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const spec = "40/100ms,cost:150/100ms,200000/s"
		dir := t.TempDir()
		var ss []*localstore.Store
		for range 3 {
			ss = append(ss, open(t, dir, "turns", spec, localstore.Options{}))
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var all []throttle.Call
		for i := range 1500 {
			s := ss[rng.IntN(len(ss))]
			if i >= 500 && i < 520 {
				s = ss[0] // a run of turns by one
			}
			cost := 1 + rng.IntN(4)
			a, err := s.Admit(context.Background(), cost)
			if err != nil {
				t.Fatalf("admission %d: %v", i, err)
			}
			all = append(all, throttle.Call{At: a.At, Cost: cost})
			a.Release()
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
		}
		for _, s := range ss {
			_ = s.Close()
		}
		checkCalls(t, spec, all)
		checkStore(t, dir, "turns")
	})
}

// TestKeptFromOpen: Open's check of a store that exists keeps the file
// open for the first admission, so that a process admitting once (pace
// exec) opens and maps it once; a new quota's Open keeps nothing (it
// creates no file). Stores whose file was kept from Open while another
// wrote to it, made it grow past their mapping and reused its pages,
// must still see it as it is at their first admission: every rule kept,
// and the store whole by bbolt's check.
func TestKeptFromOpen(t *testing.T) {
	if !localstore.KeepOpen {
		t.Skip("the store file is not kept open on this system")
	}
	synctest.Test(t, func(t *testing.T) {
		const spec = "40/100ms,cost:150/100ms,100000/h"
		dir := t.TempDir()
		first := open(t, dir, "fromopen", spec, localstore.Options{})
		if localstore.Kept(first) {
			t.Error("Open of a new quota keeps a store file open")
		}
		var all []throttle.Call
		admit := func(s *localstore.Store, n int) {
			t.Helper()
			for i := range n {
				cost := 1 + i%4
				a, err := s.Admit(context.Background(), cost)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, throttle.Call{At: a.At, Cost: cost})
				a.Release()
				time.Sleep(time.Millisecond)
			}
		}
		admit(first, 10)
		var late []*localstore.Store
		for range 3 {
			s := open(t, dir, "fromopen", spec, localstore.Options{})
			if !localstore.Kept(s) {
				t.Fatal("Open of an existing store keeps no file open")
			}
			late = append(late, s)
		}
		before, _ := os.Stat(first.Path())
		admit(first, 3000)
		if after, _ := os.Stat(first.Path()); after.Size() < 4*before.Size() {
			t.Fatalf("store grew from %d to %d bytes only, want it to outgrow what Open mapped", before.Size(), after.Size())
		}
		for _, s := range late {
			admit(s, 5)
			admit(first, 50)
		}
		for _, s := range append(late, first) {
			_ = s.Close()
		}
		checkCalls(t, spec, all)
		checkStore(t, dir, "fromopen")
		q, err := localstore.Inspect(dir, "fromopen")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := q.Rules[2].Used, len(all); got != want {
			t.Errorf("the hourly rule holds %d calls, want %d", got, want)
		}
	})
}

// TestKeptOpenGrows: a store kept open by one process, after another
// made the file grow well past what the first mapped, is still read
// and written correctly.
func TestKeptOpenGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const spec = "100000/h"
		dir := t.TempDir()
		small := open(t, dir, "grow", spec, localstore.Options{})
		big := open(t, dir, "grow", spec, localstore.Options{})
		admit := func(s *localstore.Store, n int) {
			t.Helper()
			for range n {
				a, err := s.Admit(context.Background(), 1)
				if err != nil {
					t.Fatal(err)
				}
				a.Release()
				time.Sleep(time.Millisecond)
			}
		}
		admit(small, 3)
		before, _ := os.Stat(small.Path())
		admit(big, 5000) // 5,000 log entries: some 200 KiB
		after, _ := os.Stat(small.Path())
		if after.Size() < 4*before.Size() {
			t.Fatalf("store grew from %d to %d bytes only, want it to outgrow the first mapping", before.Size(), after.Size())
		}
		admit(small, 3)
		admit(big, 3)
		admit(small, 3)
		q, err := localstore.Inspect(dir, "grow")
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Rules[0].Used; got != 5012 {
			t.Errorf("the hourly rule holds %d calls, want 5012", got)
		}
		_ = small.Close()
		_ = big.Close()
		checkStore(t, dir, "grow")
	})
}

// TestKeptOpenMovedAway: a store file moved away (as the message about a
// damaged store tells the user to do) while a process keeps it open: the
// process's next admission goes to the new file the others use, not to
// the one moved away, so the quota is not split.
func TestKeptOpenMovedAway(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, "moved", "5/h", localstore.Options{})
	other := open(t, dir, "moved", "5/h", localstore.Options{})
	admit := func(s *localstore.Store) {
		t.Helper()
		a, err := s.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	admit(s)
	admit(s)
	if err := os.Rename(s.Path(), s.Path()+".old"); err != nil {
		t.Fatal(err)
	}
	admit(other)
	admit(s)
	q, err := localstore.Inspect(dir, "moved")
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Rules[0].Used; got != 2 {
		t.Errorf("the new store holds %d calls, want 2 (one of each process after the move)", got)
	}
}

// TestKeptOpenForeignLock: between its transactions a process does not
// hold bbolt's lock on the file it keeps open (an older pace opens the
// file afresh under the transaction lock), but takes it for each
// transaction: a program holding it (here a bbolt reader) keeps the
// process from writing until it lets go.
func TestKeptOpenForeignLock(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, "foreign", "1000/s", localstore.Options{Timeout: 200 * time.Millisecond})
	a, err := s.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	reader, err := bbolt.Open(s.Path(), 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("a reader could not open the store between transactions: %v", err)
	}
	a, err = s.Admit(context.Background(), 1)
	if !errors.Is(err, throttle.ErrBackend) {
		if err == nil {
			a.Release()
		}
		t.Errorf("Admit while a reader holds bbolt's lock = %v, want an error wrapping throttle.ErrBackend (locked)", err)
	}
	_ = reader.Close()
	if a, err := s.Admit(context.Background(), 1); err != nil {
		t.Errorf("Admit once the reader closed = %v", err)
	} else {
		a.Release()
	}
}

// TestKeptOpenTornCommit: another process was killed in its commit after
// writing its pages and part of its meta page (here: the meta page it
// would have written holds a newer transaction id and a wrong checksum,
// and the pages past the file's end garbage). A process that kept the
// file open takes the store as the last whole commit left it, as bbolt
// does at an open, admits on from there, and leaves a whole store.
func TestKeptOpenTornCommit(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, "torn", "5/h", localstore.Options{})
	admit := func(s *localstore.Store) {
		t.Helper()
		a, err := s.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	admit(s)
	admit(s)
	f, err := os.OpenFile(s.Path(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	metas := make([][]byte, 2)
	for i := range metas {
		metas[i] = make([]byte, 64)
		if _, err := f.ReadAt(metas[i], int64(i*page+16)); err != nil {
			t.Fatal(err)
		}
	}
	txid := func(m []byte) uint64 { return binary.NativeEndian.Uint64(m[48:]) }
	newer, older := 0, 1
	if txid(metas[1]) > txid(metas[0]) {
		newer, older = 1, 0
	}
	torn := slices.Clone(metas[newer])
	binary.NativeEndian.PutUint64(torn[48:], txid(torn)+1)
	torn[60] ^= 0xff // the checksum does not match
	if _, err := f.WriteAt(torn, int64(older*page+16)); err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, 4*page), fi.Size()); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	admit(s)
	other := open(t, dir, "torn", "5/h", localstore.Options{})
	admit(other)
	admit(s)
	q, err := localstore.Inspect(dir, "torn")
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Rules[0].Used; got != 5 {
		t.Errorf("the rule holds %d calls, want 5", got)
	}
	_ = s.Close()
	_ = other.Close()
	checkStore(t, dir, "torn")
}

// TestLockedStoreWaitsOnce: a store file that another program holds
// locked (bbolt's flock: a bbolt writer, or a process stopped in its
// commit) makes Open give up after Options.Timeout, once. Open's check of
// the stored rules tried the file kept open, waited the timeout for the
// lock, then tried it again without keeping it open and waited it again:
// pace said "stayed locked by another process for 10s" after 20s.
func TestLockedStoreWaitsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir, "held", "1000/s", localstore.Options{})
		a, err := s.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		path := s.Path()
		s.Close()

		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		const timeout = 2 * time.Second
		start := time.Now()
		s2, err := localstore.Open(context.Background(), localstore.Options{Dir: dir, Key: "held",
			Rules: mustRules(t, "1000/s"), Timeout: timeout})
		waited := time.Since(start)
		if err == nil {
			s2.Close()
		}
		if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), path) {
			t.Errorf("Open of a store locked by another program = %v, want an error wrapping throttle.ErrBackend naming %s", err, path)
		}
		// bbolt polls its lock every 50ms.
		if waited > timeout+100*time.Millisecond {
			t.Errorf("Open of a store locked by another program gave up after %v, want the timeout, %v", waited, timeout)
		}
	})
}

// TestLockedTxLockNamed: a quota whose transaction lock (NAME.lock) another
// process holds, as a pace stopped in a transaction does (SIGSTOP), makes
// an admission give up after the timeout with an error naming that file.
// It named the store file, NAME.db, which nothing held: a user looking
// for the holder with fuser or lsof looked at the wrong file.
func TestLockedTxLockNamed(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, "txheld", "1000/s", localstore.Options{Timeout: 200 * time.Millisecond})
	a, err := s.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	lock := filepath.Join(dir, "txheld.lock")
	f, err := os.OpenFile(lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	a, err = s.Admit(context.Background(), 1)
	if err == nil {
		a.Release()
	}
	if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), lock+" stayed locked") {
		t.Errorf("Admit while another process holds %s = %v, want an error wrapping throttle.ErrBackend saying it stayed locked", lock, err)
	}
}
