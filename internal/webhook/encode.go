package webhook

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// Encode serialises a canonical envelope for ingest. envelope.Event.Marshal
// writes the payload verbatim (no compaction, no HTML escaping), so ingest
// receives the provider's exact body.
func Encode(ev envelope.Event) ([]byte, error) {
	// Only the shape is checked: the provider parsed the body already and
	// ingest validates the envelope strictly.
	payload := bytes.TrimSpace(ev.Payload)
	if len(payload) < 2 || payload[0] != '{' || payload[len(payload)-1] != '}' {
		return nil, errors.New("webhook: envelope payload must be a JSON object")
	}
	ev.PayloadRef = nil
	b, err := ev.Marshal()
	if err != nil {
		return nil, fmt.Errorf("webhook: encode envelope %s: %w", ev.ID, err)
	}
	return b, nil
}
