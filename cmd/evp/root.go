package main

import "github.com/spf13/cobra"

// commands are the subcommand constructors; each command's file adds its
// own in an init function, so commands are added without editing this one.
var commands []func() *cobra.Command

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "evp",
		Short:         "Operate and develop the event platform",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}
