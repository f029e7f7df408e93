package cmd

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite docs/cli and the expectations in testdata/script")

// docsDir holds the generated command reference.
const docsDir = "../docs/cli"

// TestDocsCurrent checks that docs/cli matches the commands; run
// `go test ./cmd -run TestDocsCurrent -update` to regenerate it.
func TestDocsCurrent(t *testing.T) {
	ios, _, _, _ := Test()
	root := NewCmdRoot(&Factory{IOStreams: ios})
	tmp := t.TempDir()
	names, err := GenMarkdownTree(root, tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pace.md", "pace_run.md", "pace_version.md", "pace_completion.md", "pace_completion_bash.md"} {
		if !slices.Contains(names, want) {
			t.Errorf("generated %q, want it to include %s", names, want)
		}
	}
	if *update {
		if err := os.MkdirAll(docsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(docsDir, "pace*.md"))
		for _, f := range old {
			os.Remove(f)
		}
		for _, n := range names {
			b, _ := os.ReadFile(filepath.Join(tmp, n))
			if err := os.WriteFile(filepath.Join(docsDir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, n := range names {
		want, _ := os.ReadFile(filepath.Join(tmp, n))
		got, err := os.ReadFile(filepath.Join(docsDir, n))
		if err != nil || string(got) != string(want) {
			t.Errorf("docs/cli/%s is out of date; run: go test ./cmd -run TestDocsCurrent -update", n)
		}
	}
	existing, _ := filepath.Glob(filepath.Join(docsDir, "pace*.md"))
	for _, f := range existing {
		if !slices.Contains(names, filepath.Base(f)) {
			t.Errorf("docs/cli/%s documents no command; run: go test ./cmd -run TestDocsCurrent -update", filepath.Base(f))
		}
	}
}

// TestFlagDefaultsSaidOnce: a flag whose usage says its default ("(default:
// adapted ...)", "(0: no timeout)") gets no second one from pflag, which
// contradicted it ("(default: adapted, at least 10ms) (default 10ms)"), and
// every flag's value is named in capitals (DURATION, not duration).
func TestFlagDefaultsSaidOnce(t *testing.T) {
	ios, _, _, _ := Test()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			line := pflag.NewFlagSet("", pflag.ContinueOnError)
			line.AddFlag(f)
			usage := strings.Join(strings.Fields(line.FlagUsages()), " ")
			if strings.Count(usage, "(default") > 1 || strings.Contains(usage, "(0: ") && strings.Contains(usage, "(default") {
				t.Errorf("pace %s: the default said twice: %s", c.Name(), usage)
			}
			if name, _ := pflag.UnquoteUsage(f); name != strings.ToUpper(name) && !strings.ContainsAny(name, "|:") {
				t.Errorf("pace %s --%s: its value is named %q, want capitals", c.Name(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmdRoot(&Factory{IOStreams: ios}))
}
