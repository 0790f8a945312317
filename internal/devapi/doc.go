// Package devapi is the local `make dev` stack as its clients see it: the
// address it listens on, the paths it serves beyond the function routes,
// its clearly-local default secrets, the region and account its ARNs name,
// and SDK clients pointed at it. The stack itself (package devstack, under
// internal/local) uses these names too, so there is one owner of each.
//
// It exists so the operator CLI can talk to a local stack without linking
// the stack: `evp` is the binary operators install and run against
// production, and nothing under internal/local (the emulators, minidyn,
// gofakes3, the local Lambda and Step Functions runners) may be linked
// into it (cmd/evp's TestEvpLinksNoEmulators). The stack runs from
// cmd/evp-dev.
package devapi
