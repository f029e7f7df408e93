//go:build !unix

package cmd

// raiseOpenFileLimit does nothing where there is no such limit to raise.
func raiseOpenFileLimit() {}

// openFileLimit reports no limit on open files.
func openFileLimit() (int, bool) { return 0, false }
