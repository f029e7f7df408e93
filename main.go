// Command pace runs jobs or fetches URLs while keeping several rate rules
// at once. See the README and `pace --help`.
package main

import (
	"os"

	"github.com/pace-cli/pace/cmd"
)

func main() {
	os.Exit(cmd.Main())
}
