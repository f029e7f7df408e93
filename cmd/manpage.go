package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// This file writes man pages (roff, section 1) and shell completions, for
// release archives: `pace gen-docs --man DIR --completions DIR`, run by
// goreleaser. It follows cobra/doc's GenManTree without its dependency on
// go-md2man: the help text is plain, so the roff is plain too.

// newCmdGenDocs returns the hidden command that writes man pages and
// completions.
func newCmdGenDocs(f *Factory) *cobra.Command {
	var man, completions string
	cmd := &cobra.Command{
		Use:    "gen-docs [--man <dir>] [--completions <dir>]",
		Short:  "Write man pages and shell completions (for release archives)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root := cmd.Root()
			if man != "" {
				if err := GenManTree(root, man); err != nil {
					return err
				}
			}
			if completions != "" {
				if err := genCompletions(root, completions); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&man, "man", "", "write man pages to `DIR`")
	cmd.Flags().StringVar(&completions, "completions", "", "write bash, zsh and fish completions to `DIR`")
	return cmd
}

// GenManTree writes one man page per available command of root into dir,
// named like pace-run.1.
func GenManTree(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range documentedCommands(root) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		if err := os.WriteFile(filepath.Join(dir, name), genMan(c), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// genMan returns the roff man page of one command.
func genMan(c *cobra.Command) []byte {
	c.InitDefaultHelpFlag()
	var b bytes.Buffer
	title := strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-"))
	fmt.Fprintf(&b, ".TH %q 1 \"\" \"pace %s\" \"pace manual\"\n", title, fullVersion())
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

// genCompletions writes bash, zsh and fish completions into dir.
func genCompletions(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, gen := range map[string]func(string) error{
		"pace.bash": func(p string) error { return root.GenBashCompletionFileV2(p, true) },
		"_pace":     root.GenZshCompletionFile,
		"pace.fish": func(p string) error { return root.GenFishCompletionFile(p, true) },
	} {
		if err := gen(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("write %s completion: %w", name, err)
		}
	}
	return nil
}
