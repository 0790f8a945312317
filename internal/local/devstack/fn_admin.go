package devstack

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
)

// admin-api runs as deployed (its routes, the replay engine in-process,
// queue depths, pause and resume applied at once through the
// subscriber-health function); its bearer key is the stack's ADMIN_API_KEY
// setting (default DefaultAdminKey; Secrets Manager is not emulated), and
// its console's cookie drops Secure over the stack's plain HTTP.
func init() {
	locals[adminfn.Name] = local{env: func(context.Context, *Stack) (map[string]string, error) {
		return map[string]string{adminfn.EnvConsoleInsecureCookie: "true"}, nil
	}}
}
