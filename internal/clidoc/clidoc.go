// Package clidoc writes the reference of a cobra command tree: a markdown
// page per command (docs/cli) and a roff man page per command (section
// 1, for release archives). It follows cobra/doc's GenMarkdownTree and
// GenManTree without the date stamp (so that a test can check the pages
// are current) and without cobra/doc's dependency on go-md2man: the help
// text is plain, so the roff is plain too.
package clidoc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Groups returns a command's own flags in named groups (pflag.FlagSet
// names are the headings), or nil for one list. A nil Groups lists every
// command's flags as one.
type Groups func(*cobra.Command) []*pflag.FlagSet

// of returns c's groups, or nil.
func (g Groups) of(c *cobra.Command) []*pflag.FlagSet {
	if g == nil {
		return nil
	}
	return g(c)
}

// Markdown writes one markdown page per available command of root
// into dir, named like pace_run.md, and returns the file names written.
func Markdown(root *cobra.Command, dir string, groups Groups) ([]string, error) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var names []string
	for _, c := range documentedCommands(root) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
		if err := os.WriteFile(filepath.Join(dir, name), genMarkdown(c, groups), 0o644); err != nil {
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
func genMarkdown(c *cobra.Command, groups Groups) []byte {
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
	if fl, sets := c.NonInheritedFlags(), groups.of(c); sets != nil {
		fmt.Fprintf(&b, "### Options\n\n")
		for _, fs := range sets {
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

// fileName is the name of c's page.
func fileName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// Man writes one man page per available command of root into dir,
// named like pace-run.1; source and manual are the footer's program and
// version ("pace v1.2.0") and the manual's title ("pace manual").
func Man(root *cobra.Command, dir, source, manual string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range documentedCommands(root) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		if err := os.WriteFile(filepath.Join(dir, name), genMan(c, source, manual), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// genMan returns the roff man page of one command.
func genMan(c *cobra.Command, source, manual string) []byte {
	c.InitDefaultHelpFlag()
	var b bytes.Buffer
	title := strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-"))
	fmt.Fprintf(&b, ".TH %q 1 \"\" \"%s\" \"%s\"\n", title, source, manual)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(strings.ReplaceAll(c.CommandPath(), " ", "-")), roff(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n", roff(c.UseLine()))
	if c.Long != "" {
		fmt.Fprintf(&b, ".SH DESCRIPTION\n.nf\n%s\n.fi\n", roff(strings.TrimRight(c.Long, "\n")))
	}
	if fl := c.NonInheritedFlags(); fl.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS\n")
		fl.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			name := "\\-\\-" + roff(f.Name)
			if f.Shorthand != "" {
				name = "\\-" + f.Shorthand + ", " + name
			}
			fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", name, roff(f.Usage))
		})
	}
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.nf\n%s\n.fi\n", roff(c.Example))
	}
	var see []string
	if c.HasParent() {
		see = append(see, strings.ReplaceAll(c.Parent().CommandPath(), " ", "-")+"(1)")
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			see = append(see, strings.ReplaceAll(sub.CommandPath(), " ", "-")+"(1)")
		}
	}
	if len(see) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", roff(strings.Join(see, ", ")))
	}
	return b.Bytes()
}

// roff escapes text for roff: backslashes, and a line starting with a dot
// or an apostrophe.
func roff(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\e")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = "\\&" + l
		}
	}
	return strings.Join(lines, "\n")
}
