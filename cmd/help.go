package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The help of pace run and pace fetch leads with examples and the flags
// people use most, then the rest in groups, then the long description:
// forty flags in one alphabetical list hid the ten that matter. Each flag
// names its group in an annotation (flagGroupKey); flags without one go
// under "Other".

// flagGroupKey is the pflag annotation that names a flag's help group.
const flagGroupKey = "pace_help_group"

// Help groups, in the order the help shows them.
const (
	groupCommon = "Flags people use most"
	groupRules  = "Rules"
	groupInput  = "Input"
	groupOutput = "Output"
	groupHTTP   = "Requests"
	groupJobLog = "Job log"
	groupShared = "Shared quotas (several processes)"
	groupCI     = "Interrupts, CI and scripts"
	groupOther  = "Other"
)

var helpGroups = []string{groupCommon, groupRules, groupInput, groupOutput, groupHTTP, groupJobLog, groupShared, groupCI, groupOther}

// flagGroups places each flag of pace run and pace fetch. The first group
// holds the ten flags most runs need.
var flagGroups = map[string]string{
	"rate": groupCommon, "jobs": groupCommon, "input": groupCommon, "retries": groupCommon,
	"timeout": groupCommon, "keep-order": groupCommon, "dry-run": groupCommon, "joblog": groupCommon,
	"resume": groupCommon, "quiet": groupCommon,

	"cost-rate": groupRules, "cost": groupRules, "cost-from-response": groupRules, "allow-reorder": groupRules,
	"margin": groupRules, "rules-from-server": groupRules, "ignore-server-limits": groupRules,
	"max-server-pause": groupRules,

	"null": groupInput, "colsep": groupInput, "shell": groupInput,

	"output": groupOutput, "output-name": groupOutput, "tag": groupOutput, "verbose": groupOutput,
	"progress": groupOutput, "progress-interval": groupOutput, "summary": groupOutput,
	"summary-file": groupOutput, "metrics-addr": groupOutput, "max-body": groupOutput,

	"method": groupHTTP, "header": groupHTTP, "data": groupHTTP, "insecure": groupHTTP, "redact-param": groupHTTP,

	"resume-failed": groupJobLog,

	"redis": groupShared, "key": groupShared, "state": groupShared, "global-jobs": groupShared,
	"redis-timeout": groupShared,

	"halt": groupCI, "grace": groupCI,
}

// groupFlags annotates cmd's flags with their help groups and gives cmd
// the grouped help.
func groupFlags(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if g, ok := flagGroups[f.Name]; ok {
			cmd.Flags().SetAnnotation(f.Name, flagGroupKey, []string{g})
		}
	})
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { writeGroupedHelp(c.OutOrStdout(), c) })
}

// writeGroupedHelp writes c's help: what it does, its usage, examples,
// the flags by group, then the long description.
func writeGroupedHelp(w io.Writer, c *cobra.Command) {
	c.InitDefaultHelpFlag()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  %s\n", c.Short, c.UseLine())
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	for _, fs := range flagsByGroup(c) {
		fmt.Fprintf(&b, "\n%s:\n%s", fs.Name(), fs.FlagUsages())
	}
	if c.Long != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(c.Long, "\n"))
	}
	io.WriteString(w, b.String())
}

// flagsByGroup returns c's own flags in one set per help group, named
// after the group, in the order of helpGroups; groups without a flag are
// left out.
func flagsByGroup(c *cobra.Command) []*pflag.FlagSet {
	var sets []*pflag.FlagSet
	for _, g := range helpGroups {
		fs := pflag.NewFlagSet(g, pflag.ContinueOnError)
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			if flagGroup(f) == g && !f.Hidden {
				fs.AddFlag(f)
			}
		})
		if fs.HasAvailableFlags() {
			sets = append(sets, fs)
		}
	}
	return sets
}

// grouped reports whether c's flags are in help groups.
func grouped(c *cobra.Command) bool {
	found := false
	c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) { found = found || flagGroup(f) != groupOther })
	return found
}

// flagGroup returns the help group of f.
func flagGroup(f *pflag.Flag) string {
	if g := f.Annotations[flagGroupKey]; len(g) == 1 {
		return g[0]
	}
	return groupOther
}
