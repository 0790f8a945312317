// Command evp is the platform's operator and developer CLI: `evp dev` runs
// the whole platform locally; the other commands publish events, inspect
// them and triage incidents, against the local stack or a deployed stage.
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
		os.Exit(1)
	}
}
