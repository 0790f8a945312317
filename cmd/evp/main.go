// Command evp is the platform's operator and developer CLI: its commands
// publish events, inspect them and triage incidents, against the local
// stack or a deployed stage. It links no emulator (TestEvpLinksNoEmulators):
// `evp dev` starts the local stack's own binary, cmd/evp-dev.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		if !errors.Is(err, errSilent) { // the command printed its own answer
			fmt.Fprintln(os.Stderr, "evp:", err)
		}
		var status exitStatus
		if errors.As(err, &status) {
			os.Exit(int(status))
		}
		os.Exit(1)
	}
}
