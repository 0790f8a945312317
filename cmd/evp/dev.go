package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newDevCmd) }

// devBinary is the local stack's own binary (cmd/evp-dev). evp does not
// link the stack: it is what operators install and run against
// production, and the emulators (minidyn, gofakes3, the local Lambda and
// Step Functions runners) have no business there.
const devBinary = "evp-dev"

// errDevNotInstalled is `evp dev` without evp-dev beside evp or on PATH.
var errDevNotInstalled = errors.New("evp dev runs the local stack, which is a binary of its own: " +
	"`make dev`, `go run ./cmd/evp-dev`, or install it beside evp (`make build` puts bin/evp-dev next to bin/evp; " +
	"`go install ./cmd/evp-dev`)")

// newDevCmd is `evp dev`: it runs evp-dev with the same arguments, as git
// runs git-<name>, so `evp dev --sweep-every 10s` keeps working where
// both are installed.
func newDevCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dev [evp-dev flags]",
		Short: "Run the whole platform locally (starts evp-dev, installed beside evp)",
		Long: "Runs evp-dev, the local stack's own binary, with the same arguments (evp links no emulator).\n" +
			"Without it installed: `make dev`, or `go run ./cmd/evp-dev` in the repository.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := findDevBinary()
			if err != nil {
				if asksForHelp(args) {
					// Help is an answer, not a failure: say what evp dev
					// is and how to get the stack.
					fmt.Fprintf(cmd.OutOrStdout(), "%s\n\nUsage:\n  evp %s\n\nevp-dev is not installed: %v\n", cmd.Long, cmd.Use, err)
					return nil
				}
				return err
			}
			// Not CommandContext: Ctrl-C reaches evp-dev from the terminal
			// (same process group) and it shuts down in its own time;
			// killing it from here would skip that.
			c := exec.Command(bin, args...)
			c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := c.Run(); err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) && exit.ExitCode() > 0 {
					return exitStatus(exit.ExitCode()) // it printed its own error
				}
				return fmt.Errorf("%s: %w", devBinary, err)
			}
			return nil
		},
	}
}

// asksForHelp reports whether evp dev's (unparsed) arguments ask for help.
func asksForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "--help", "-help", "help":
			return true
		case "--":
			return false
		}
	}
	return false
}

// exitStatus fails evp with a child's exit status, after the child
// printed its own answer.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

func (s exitStatus) Is(target error) bool { return target == errSilent }

// findDevBinary looks beside the running evp first (bin/evp, bin/evp-dev),
// then on PATH.
func findDevBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), devBinary)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(devBinary); err == nil {
		return p, nil
	}
	return "", errDevNotInstalled
}
