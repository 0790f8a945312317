package standard_test

import (
	"testing"

	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

// BenchmarkVerifyCanonicalize is the Standard Webhooks adapter's CPU per
// delivery (webhooktest.BenchVerifyCanonicalize): a contact.created
// message grown to 2 KiB and 64 KiB.
func BenchmarkVerifyCanonicalize(b *testing.B) {
	webhooktest.BenchVerifyCanonicalize(b, suite(b))
}
