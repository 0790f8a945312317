package identity

import "github.com/siteswarm/eventplatform/internal/envelope"

// LegacyOf exposes the pre-scheme hash to the tests.
func LegacyOf(ev envelope.Event) string { return legacy(ev) }
