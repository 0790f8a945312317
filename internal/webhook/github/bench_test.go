package github_test

import (
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/github"
	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

// BenchmarkVerifyCanonicalize is the GitHub adapter's CPU per delivery
// (webhooktest.BenchVerifyCanonicalize): an issues.opened event grown to
// 2 KiB and 64 KiB.
func BenchmarkVerifyCanonicalize(b *testing.B) {
	webhooktest.BenchVerifyCanonicalize(b, webhooktest.Suite{
		Declaration: github.Declaration,
		Setup:       webhook.Setup{Tenants: tenants},
		Body:        sample(b, "issues.opened.json"),
		Sign: func(body []byte, secret string, _ time.Time) map[string]string {
			return headers("issues", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body, secret)
		},
		SecretA: secretA, SecretB: secretB, Now: now,
	})
}
