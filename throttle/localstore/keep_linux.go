package localstore

// keepOpen says that a process keeps the store file open and mapped
// between its transactions (keep.go). Linux maps a file from the page
// cache its writes go through, so the mapping of one process sees the
// others' commits; elsewhere each transaction opens the file afresh.
const keepOpen = true
