package dynamo

import (
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/sweep"
)

// The recovery plane's ports, implemented here.
var (
	_ sweep.Rows        = (*Events)(nil)
	_ sweep.Abandoner   = (*Recovery)(nil)
	_ consume.Incidents = (*Incidents)(nil)
)
