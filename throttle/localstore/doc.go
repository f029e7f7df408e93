// Package localstore is the local-store backend of pace's limiter: it
// keeps several rate rules at once, and optionally a cap on calls in
// flight, for every process on one host that shares a quota, with no
// server. It satisfies throttle.Backend, with the same model as
// throttle.Limiter and redisrate.Limiter and the state kept in a file.
//
// # Files
//
// A quota NAME lives in a directory (DefaultDir unless told otherwise,
// created 0700) as:
//
//	NAME.db        the store: a bbolt database (see state.go for its buckets)
//	NAME.lock      an empty file, locked for the length of each transaction
//	               (each process keeps it open between transactions)
//	NAME.open      an empty file, locked shared by every open Store (Reset
//	               takes it exclusive, so it never resets a quota in use)
//	NAME.slots/<i> slot i of the cap on calls in flight (GlobalJobs)
//
// NAME may hold only letters, digits, '.', '_' and '-' (at most 128 of
// them; not "." or "..").
//
// # Transactions
//
// Each admission is one transaction: take NAME.lock (the kernel queues
// the waiters and wakes one when it is released: no polling; a process
// keeps the file open, and opens it again if it was removed), check every
// rule at one instant in NAME.db and, only if all of them allow the call,
// record it in all of them, commit, and let go of the lock. On Linux a
// process keeps NAME.db open and mapped between its transactions, and
// before each one makes what bbolt keeps in memory true again (keep.go):
// it takes bbolt's flock on the file again (let go between transactions,
// so that other processes, and older pace versions that open the file
// for each transaction, can use it), checks that the file at the path is
// still the one it keeps, and whole, and reloads bbolt's freelist if
// another process committed since; a file that grew past its mapping is
// opened afresh. Elsewhere each transaction opens the file and closes it.
// A refused call records nothing (its transaction rolls back, which
// writes nothing) and sleeps for the wait the transaction computed, plus
// a small random jitter, before asking again.
//
// Opening the store only reads it (the check of the stored rules), so a
// process that admits one call, such as pace exec, pays for one write
// transaction; on Linux that check opens the file to keep it, so such a
// process opens and maps the store once.
//
// # Durability
//
// By default a transaction ends once its writes are in the kernel's
// cache (bbolt's NoSync): it does not wait for the disk. A process killed
// at any point, even with SIGKILL inside a commit, still leaves a whole
// store holding every admission recorded, since the kernel, not the
// process, writes the pages back: only a crash of the host or a power cut
// can lose admissions. Two things bound what that costs (crash.go):
//
//   - Once a second at most, an admission waits for the disk (bbolt's
//     two fsyncs) and the store records when: an admission that Admit
//     returned and a crash lost was made in the second after the last
//     one the disk kept that waited.
//   - The store records the host's boot it was last written in (Linux's
//     boot_id; kern.boottime on macOS and the BSDs). The first admission
//     in a new boot records in every rule, at the end of that second,
//     what lost admissions can have used: as many calls as the tightest
//     count rule of a second or more allows (at most the rule's own N),
//     and a cost rule full. So no rule admits more after a crash than it
//     should, at the price of at most a second's worth of calls, and only
//     in windows still open when the host is back (a per-minute window
//     has passed by then; a daily one has not). A clean reboot cannot be
//     told from a crash that lost nothing, and is treated the same.
//     Where boots cannot be told apart (Windows, other systems) a rule
//     may admit again, after a crash, what the lost admissions used: at
//     most N more in the window that straddles it. So may a store last
//     written by a pace from before this recovery.
//
// The kernel may write back the pages of the last transactions in any
// order, and bbolt checks the checksum of its meta page, not of the pages
// it points to. A crash may so leave pages that bbolt cannot read: the
// store is then refused with an error wrapping throttle.ErrBackend until
// it is moved away, never silently reset. Or it may leave a meta page
// whose pages hold an earlier state, which reads as if the later
// admissions were lost, and the recovery above covers them
// (TestHostCrashTorn). Pages reused by a transaction after the last one
// that waited for the disk could in principle read as another state
// still; no test produces that.
//
// Options.Sync waits for the disk at every admission, so that nothing
// Admit returned can be lost, at about a tenth of the speed: on a 2-CPU
// Linux VM about 0.5 to 2ms per admission against about 0.1ms. See
// BenchmarkAdmit, whose "processes" cases run 4 real processes sharing
// one quota. (macOS makes each fsync a full flush of the disk's cache,
// F_FULLFSYNC, which costs much more.)
//
// Rules are kept as redisrate keeps them: a rule with N up to
// Options.CounterAbove (100,000 by default) in an exact log
// of the calls in its window, with their costs and a running sum; a
// larger one in a counter of buckets of width ceil(window/1024), the
// oldest counted whole, that may refuse a call up to one bucket early but
// never admits one too many. Each transaction first drops what has left
// the window, so a rule's state is bounded by N calls, or about 1026
// buckets, and a rule unused for longer than its window holds nothing.
// A count rule counts every call as 1; a cost rule counts its cost, which
// Admission.Correct may change afterwards, at the call's instant.
//
// # Rule sets
//
// The store keeps the rule spec of the processes that use it (their
// rules sorted by window, plus global-jobs and counter-above when they
// matter, as redisrate's). A process with other rules gets a
// *throttle.MismatchError, from Open before
// anything runs, or from an admission if another process took the quota
// meanwhile. Once every call recorded has left its window, a process with
// other rules takes the quota over; Reset forgets it at once.
//
// A store file that bbolt cannot read, or that bbolt panics on, or whose
// format is newer than this code knows, gives an error wrapping
// throttle.ErrBackend that names the file and says to move it away: the
// store is never silently reset. So does a store that stays locked by
// another process for Options.Timeout. Errors of the operating system
// (too many open files, a full disk) are retried with backoff for up to
// Options.Timeout.
//
// # Time
//
// A call's instant is the host's clock (time.Now().UnixNano()), read
// inside the transaction, under the lock: the same clock for every
// process on the host, so instants grow in the order the transactions
// run. The clock may step. A step back by D does not take the store's
// time back: it runs on from the latest call recorded, at half the
// clock's speed, until the clock has caught up, 2D later; meanwhile
// waits take up to twice as long and an Admission's At is ahead of the
// clock by up to D, but no rule is broken and no admission stalls for the
// length of the step. A step forward by D makes the calls of the last D
// look D older: if D is a sizeable part of a window, up to N more calls
// may pass in that window. Redis's TIME, which redisrate uses, has the
// same weakness; NTP's gradual corrections (slewing) do not matter.
//
// # Fairness
//
// Within one process admission is FIFO: callers queue, and one
// transaction at a time asks the store for the call at the head. Across processes whoever gets the lock first once room frees
// wins, as far as the kernel's lock queue goes: a process is not
// guaranteed a share, only the host as a whole is kept within the rules.
// The jitter spreads the retries of processes woken by the same expiry.
//
// # Crash safety
//
// bbolt commits copy-on-write: the new pages are written elsewhere, then
// a meta page that points at them, with a checksum. A process killed
// (even with SIGKILL) at any point of a transaction leaves the store as
// it was before the transaction or after it. A call is recorded before
// Admit returns, so a call that went out is always in the store (short of
// a crash of the host: see Durability); one
// recorded by a process that died before making it only counts against
// the quota, on the safe side. The tests kill hundreds of processes in
// and around their commits while others admit, then check every
// reported admission with throttle.Check and the store with bbolt's own
// consistency check.
//
// # Slots
//
// With GlobalJobs, Admit first takes one of GlobalJobs slots: slot i is
// the file NAME.slots/<i>, held by an exclusive lock (flock, or
// LockFileEx on Windows) for as long as the call runs. The kernel
// releases the lock when the last descriptor of that open file is
// closed: when its holder dies, unless the command it started for the
// call inherited the file (Store.SlotFile), in which case the slot stays
// held until that command and what it started have ended. No lease to
// renew or wait out. A caller that
// finds every slot held tries again every 20ms, FIFO within its process.
// The holder writes its pid, when it opened the quota and when it took
// the slot into the file, for Inspect (pace quota show), and empties it
// before letting go.
//
// Inspect reads a quota without keeping rules of its own; Reset removes a
// quota's store and slots; Keys lists the quotas of a directory.
//
// PauseUntil is local to the process, as redisrate's; Seed does nothing,
// since the store outlives processes. File locks exist on Linux, macOS,
// the BSDs and Windows; elsewhere Open fails.
package localstore
