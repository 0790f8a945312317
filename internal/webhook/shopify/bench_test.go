package shopify_test

import (
	"testing"

	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

// BenchmarkVerifyCanonicalize is the Shopify adapter's CPU per delivery
// (webhooktest.BenchVerifyCanonicalize): an orders/create webhook grown to
// 2 KiB and 64 KiB.
func BenchmarkVerifyCanonicalize(b *testing.B) {
	webhooktest.BenchVerifyCanonicalize(b, suite(b))
}
