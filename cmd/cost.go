package cmd

import "github.com/pace-cli/pace/internal/costexpr"

// costValue is the pflag.Value of --cost (package costexpr reads it).
type costValue struct{ c **costexpr.Expr }

func (v costValue) String() string {
	if v.c == nil || *v.c == nil {
		return ""
	}
	return (*v.c).String()
}

func (v costValue) Set(s string) error {
	c, err := costexpr.Parse(s)
	if err != nil {
		return err
	}
	*v.c = c
	return nil
}

func (costValue) Type() string { return "EXPR" }
