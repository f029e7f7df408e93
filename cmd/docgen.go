package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// This file writes the markdown command reference in docs/cli. It follows
// the layout of cobra/doc's GenMarkdownTree, without the date stamp (so
// that a test can check the files are current) and without cobra/doc's
// dependency on go-md2man.

// GenMarkdownTree writes one markdown page per available command of root
// into dir, named like pace_run.md, and returns the file names written.
func GenMarkdownTree(root *cobra.Command, dir string) ([]string, error) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var names []string
	for _, c := range documentedCommands(root) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
		if err := os.WriteFile(filepath.Join(dir, name), genMarkdown(c), 0o644); err != nil {
			return nil, fmt.Errorf("write command reference: %w", err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// documentedCommands returns root and every available command below it,
// subcommands before their parent: the commands that get a page.
func documentedCommands(root *cobra.Command) []*cobra.Command {
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
		all = append(all, c)
	}
	walk(root)
	return all
}

// genMarkdown returns the page for one command.
func genMarkdown(c *cobra.Command) []byte {
	c.InitDefaultHelpFlag()
	c.InitDefaultVersionFlag()
	var b bytes.Buffer
	name := c.CommandPath()
	fmt.Fprintf(&b, "## %s\n\n%s\n\n", name, c.Short)
	if c.Long != "" {
		fmt.Fprintf(&b, "### Synopsis\n\n```\n%s\n```\n\n", strings.TrimRight(c.Long, "\n"))
	}
	if c.Runnable() {
		fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "### Examples\n\n```\n%s\n```\n\n", c.Example)
	}
	if fl := c.NonInheritedFlags(); grouped(c) {
		fmt.Fprintf(&b, "### Options\n\n")
		for _, fs := range flagsByGroup(c) {
			fmt.Fprintf(&b, "%s:\n\n```\n%s```\n\n", fs.Name(), fs.FlagUsages())
		}
	} else if fl.HasAvailableFlags() {
		fmt.Fprintf(&b, "### Options\n\n```\n%s```\n\n", fl.FlagUsages())
	}
	if fl := c.InheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(&b, "### Options inherited from parent commands\n\n```\n%s```\n\n", fl.FlagUsages())
	}
	var seeAlso []string
	if c.HasParent() {
		p := c.Parent()
		seeAlso = append(seeAlso, fmt.Sprintf("* [%s](%s)\t - %s", p.CommandPath(), fileName(p), p.Short))
	}
	children := c.Commands()
	sort.Slice(children, func(i, j int) bool { return children[i].Name() < children[j].Name() })
	for _, sub := range children {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		seeAlso = append(seeAlso, fmt.Sprintf("* [%s](%s)\t - %s", sub.CommandPath(), fileName(sub), sub.Short))
	}
	if len(seeAlso) > 0 {
		fmt.Fprintf(&b, "### SEE ALSO\n\n%s\n\n", strings.Join(seeAlso, "\n"))
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n')
}

func fileName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}
