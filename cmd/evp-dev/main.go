// Command evp-dev runs the whole platform locally on embedded emulators
// (`make dev`; `evp dev` starts it too when it is installed beside evp).
// It is a binary of its own so that evp, which operators install and run
// against production, links no emulator (cmd/evp TestEvpLinksNoEmulators).
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := newDevCmd().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "evp-dev:", err)
		os.Exit(1)
	}
}
