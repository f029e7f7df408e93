// Command pace runs jobs or fetches URLs while keeping several rate rules
// at once. See the README and `pace --help`.
package main

import (
	"os"

	"github.com/pace-cli/pace/cmd"
	"github.com/pace-cli/pace/internal/foreground"
	"github.com/pace-cli/pace/internal/gctune"
	// Huge pages for start-up's heap: about 200 fewer page faults a call.
	_ "github.com/pace-cli/pace/internal/hugeheap"
)

func main() {
	// A fixed headroom for the collector while the heap is small: two or
	// three collections for 5,000 fetches instead of twelve.
	gctune.Start()
	code, die := cmd.Main()
	// Ctrl-C that stopped pace (or killed pace exec's command) kills pace
	// too, so that a shell's loop stops (foreground.Die); else the exit
	// code.
	foreground.Die(die)
	os.Exit(code)
}
