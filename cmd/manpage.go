package cmd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pace-cli/pace/internal/clidoc"
)

// This file writes man pages (package clidoc) and shell completions, for
// release archives: `pace gen-docs --man DIR --completions DIR`, run by
// goreleaser.

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
				if err := clidoc.Man(root, man, "pace "+fullVersion(), "pace manual"); err != nil {
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
	cmd.Flags().Var(pathValue{&man, "want a directory"}, "man", "write man pages to `DIR`")
	cmd.Flags().Var(pathValue{&completions, "want a directory"}, "completions", "write bash, zsh and fish completions to `DIR`")
	return cmd
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

// GenMarkdownTree writes the markdown command reference of root (docs/cli)
// into dir, one page per command with pace's flag groups, and returns the
// file names written.
func GenMarkdownTree(root *cobra.Command, dir string) ([]string, error) {
	return clidoc.Markdown(root, dir, func(c *cobra.Command) []*pflag.FlagSet {
		if !grouped(c) {
			return nil
		}
		return flagsByGroup(c)
	})
}
