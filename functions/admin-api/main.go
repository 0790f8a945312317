// Command admin-api is the operator API behind API Gateway's /admin/*
// routes (HTTP API, payload format 2.0, one ANY /admin/{proxy+} route):
// health, queue depths, event and incident views, triage and replay. Every
// request needs Authorization: Bearer <key>, checked against the active
// keys in the ADMIN_API_KEY_SECRET_ARN secret.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
)

func main() { wire.Main(adminfn.Function) }
