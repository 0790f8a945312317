// Command webhook-github is the public GitHub webhook adapter behind API
// Gateway (HTTP API, payload format 2.0, POST /webhook/github): it verifies
// the X-Hub-Signature-256 header on the raw body, canonicalizes the delivery into
// the platform envelope, invokes the private ingest function by ARN and
// maps its result to the HTTP status the sender acts on
// (internal/webhook/github).
package main

import (
	"github.com/siteswarm/eventplatform/internal/webhook/github"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func main() { wire.Main(webhookfn.For(github.Declaration)) }
