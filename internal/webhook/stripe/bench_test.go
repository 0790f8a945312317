package stripe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

// invoiceOfSize builds a pretty-printed invoice.paid event (as Stripe sends
// them) of exactly size bytes: line items up to the size, then padding in
// the description.
func invoiceOfSize(tb testing.TB, id string, size int) []byte {
	tb.Helper()
	line := func(i int) map[string]any {
		return map[string]any{
			"id": fmt.Sprintf("il_1PzB7pLkdIwHu7ix%06d", i), "object": "line_item", "amount": 4900, "currency": "usd",
			"description": "1 × Pro plan (at $49.00 / month)", "livemode": false, "metadata": map[string]any{},
			"period": map[string]any{"end": 1767268800, "start": 1764676800}, "proration": false, "quantity": 1,
			"subscription": "sub_1PaBcXLkdIwHu7ixQ9sR2tUv", "type": "subscription",
		}
	}
	build := func(lines int, description string) []byte {
		data := make([]any, lines)
		for i := range data {
			data[i] = line(i)
		}
		ev := map[string]any{
			"id": id, "object": "event", "api_version": "2024-06-20", "created": 1764676800, "livemode": false,
			"type": "invoice.paid", "pending_webhooks": 1,
			"data": map[string]any{"object": map[string]any{
				"id": "in_1PzB7pLkdIwHu7ixb1Zc2R9Q", "object": "invoice", "amount_paid": 4900 * lines, "currency": "usd",
				"customer": "cus_QqR8mN2pLk4sTv", "description": description, "metadata": map[string]any{"tenant_id": "acme"},
				"lines":  map[string]any{"object": "list", "data": data, "has_more": false, "total_count": lines},
				"status": "paid",
			}},
		}
		b, err := json.MarshalIndent(ev, "", "  ")
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	lines := 0
	for len(build(lines+1, "")) <= size {
		lines++
	}
	out := build(lines, "")
	if pad := size - len(out); pad > 0 {
		out = build(lines, strings.Repeat("x", pad))
	}
	if len(out) != size {
		tb.Fatalf("built %d bytes, want %d", len(out), size)
	}
	return out
}

// BenchmarkVerifyCanonicalize is the adapter's own CPU cost per delivery:
// signature check (HMAC-SHA256 over the body per active secret tried),
// timestamp window, event parse, tenant resolution and the envelope
// encoding handed to ingest. "rotation" has two active secrets and the
// delivery signed with the second, the worst case during a secret roll.
func BenchmarkVerifyCanonicalize(b *testing.B) {
	cases := []struct {
		name    string
		size    int
		secrets []string
		signer  string
	}{
		{"2KiB", 2 << 10, []string{secretA}, secretA},
		{"64KiB", 64 << 10, []string{secretA}, secretA},
		{"64KiB-rotation", 64 << 10, []string{secretB, secretA}, secretA},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			body := invoiceOfSize(b, "evt_bench", tc.size)
			p := provider(b, &clock{t: now}, secret.List(tc.secrets), webhook.TenantMap{})
			d := delivery(body, stripe.Sign(body, now, tc.signer))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Verify(ctx, d); err != nil {
					b.Fatal(err)
				}
				ev, err := p.Canonicalize(ctx, d)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := webhook.Encode(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
