package dynamo

import (
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

// The recovery plane's ports, implemented here.
var (
	_ outboxsweep.Rows      = (*Events)(nil)
	_ outboxsweep.Abandoner = (*Recovery)(nil)
	_ consume.Incidents     = (*Incidents)(nil)
)
