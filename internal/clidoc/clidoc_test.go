package clidoc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// tree is a small command tree: tool, with run (two flag groups) and a
// hidden command that gets no page.
func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool"}
	run := &cobra.Command{Use: "run <cmd>", Short: "Run it", Long: ".dot first\nback\\slash", Example: "  tool run x",
		Run: func(*cobra.Command, []string) {}}
	run.Flags().IntP("jobs", "j", 1, "jobs at once")
	run.Flags().String("joblog", "", "the job log")
	hidden := &cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}}
	root.AddCommand(run, hidden)
	return root
}

func TestMarkdown(t *testing.T) {
	dir := t.TempDir()
	groups := func(c *cobra.Command) []*pflag.FlagSet {
		if c.Name() != "run" {
			return nil
		}
		a, b := pflag.NewFlagSet("Jobs", pflag.ContinueOnError), pflag.NewFlagSet("Job log", pflag.ContinueOnError)
		a.AddFlag(c.Flags().Lookup("jobs"))
		b.AddFlag(c.Flags().Lookup("joblog"))
		return []*pflag.FlagSet{a, b}
	}
	names, err := Markdown(tree(), dir, groups)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, "tool_secret.md") || !slices.Contains(names, "tool.md") || !slices.Contains(names, "tool_run.md") {
		t.Errorf("pages %q, want tool.md and tool_run.md, no hidden command", names)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "tool_run.md"))
	for _, want := range []string{"## tool run\n\nRun it\n", "### Synopsis\n\n```\n.dot first\n", "```\ntool run <cmd>", "### Examples\n\n```\n  tool run x\n```",
		"### Options\n\nJobs:\n\n```\n  -j, --jobs int", "Job log:\n\n```\n      --joblog string", "### SEE ALSO\n\n* [tool](tool.md)\t - A tool"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("tool_run.md:\n%s\nlacks %q", page, want)
		}
	}
	if root, _ := os.ReadFile(filepath.Join(dir, "tool.md")); !strings.Contains(string(root), "* [tool run](tool_run.md)\t - Run it") {
		t.Errorf("tool.md:\n%s\nlacks a link to tool run", root)
	}
}

func TestMan(t *testing.T) {
	dir := t.TempDir()
	if err := Man(tree(), dir, "tool v1", "tool manual"); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "tool-run.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH \"TOOL-RUN\" 1 \"\" \"tool v1\" \"tool manual\"\n", ".SH NAME\ntool-run \\- Run it\n",
		".SH DESCRIPTION\n.nf\n\\&.dot first\nback\\eslash\n.fi\n", ".TP\n.B \\-j, \\-\\-jobs\njobs at once\n", ".SH SEE ALSO\ntool(1)\n"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("tool-run.1:\n%s\nlacks %q", page, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tool-secret.1")); err == nil {
		t.Error("a hidden command got a man page")
	}
}
