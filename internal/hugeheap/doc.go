// Package hugeheap makes pace's start-up cheaper on Linux by asking the
// kernel for transparent huge pages on the few megabytes of heap that
// start-up touches. Importing it is all it takes (main.go does, for its
// side effect); elsewhere than Linux it does nothing.
//
// Why: a pace process is short in pace exec, and most of its start-up
// is page faults, not code. On a 2-CPU VM each minor fault cost about
// 13 to 30 µs, and pace exec --wait-only took about 670 of them, half in
// the heap: package initialisation (the metrics, protobuf and Redis
// client dependencies, which must stay) allocates about 400 KB over many
// size classes, each in its own pages. With the heap's first megabytes
// marked MADV_HUGEPAGE, each 2 MB region the heap has not touched yet
// is mapped by one fault instead of hundreds: about 200 fewer faults a
// call (perf record -e page-faults).
//
// The cost, and the limits: a process's resident memory grows by up to
// the 2 MB of each region marked that it touches (Size in all), so at
// most a few MB; the kernel gives huge pages only where its
// transparent_hugepage setting is "madvise" or "always" (with "always"
// the heap had them already) and it has a free one, else it maps 4 KB
// pages as before. Where the kernel's defrag setting makes such a fault
// compact memory, a fault may wait for it. GODEBUG=disablethp=1, Go's
// own switch for huge pages in the heap, turns this off too.
package hugeheap
