package snsalert_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/snsalert"
	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
)

func TestSubjectFitsSNSLimits(t *testing.T) {
	t.Parallel()
	a := dlqarchiver.Alert{IncidentID: "inc_0123456789abcdef0123456789abcdef", Topic: "billing.events", ErrorCode: "subscriber_rejected"}
	require.Equal(t, "[evp-prod] billing.events: subscriber_rejected, inc_0123456789abcdef0123456789abcdef", snsalert.Subject("evp-prod", a))
	a.Reopened, a.RetryCount = true, 3
	require.Equal(t, "billing.events: subscriber_rejected again (x3), inc_0123456789abcdef0123456789abcdef", snsalert.Subject("", a))

	a.ErrorCode = strings.Repeat("é", 80) + "\n"
	s := snsalert.Subject("evp-a-very-long-stage-name", a)
	require.LessOrEqual(t, len(s), 100)
	require.True(t, strings.HasSuffix(s, ", "+a.IncidentID), "the id survives: %q", s)
	for _, r := range s {
		require.True(t, r >= 0x20 && r <= 0x7e, "ASCII only: %q", s)
	}
}
