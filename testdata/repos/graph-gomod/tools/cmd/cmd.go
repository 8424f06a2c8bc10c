package cmd

import "github.com/acme/tools/util"

// Run trims its argument.
func Run(s string) string { return util.Trim(s) }
