package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commands are the subcommand constructors; each command's file adds its
// own in an init function, so commands are added without editing this one.
var commands []func() *cobra.Command

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "evp",
		Short:         "Operate and develop the event platform",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("evp {{.Version}}\n")
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

// buildVersion is set by `make build` (-ldflags -X main.buildVersion=…:
// git describe), which works where the toolchain stamps no VCS data.
var buildVersion string

// version is what `evp --version` prints: what `make build` stamped, else
// the module version (a tagged `go install …@vX`), else the commit it was
// built from (with "-dirty" for uncommitted changes) and its time; and the
// Go toolchain.
func version() string {
	if buildVersion != "" {
		return fmt.Sprintf("%s (%s %s/%s)", buildVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	v, rev, at, dirty := "(devel)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "(devel)" && rev != "" {
		v = rev[:min(len(rev), 12)]
		if dirty {
			v += "-dirty"
		}
		if at != "" {
			v += " " + at
		}
	}
	return fmt.Sprintf("%s (%s %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
