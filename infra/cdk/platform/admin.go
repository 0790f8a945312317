package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
)

// Admin API routing: one proxy route; the function routes and
// authenticates every request itself (constant-time bearer check against
// the admin key secret).
const (
	PathAdmin = "/admin/{proxy+}"
	// PathConsole is the operations console (served by the admin function).
	PathConsole    = "/console"
	adminRouteKey  = "ANY " + PathAdmin
	adminRateLimit = 10
	adminBurst     = 20
)

// newAdmin creates the admin API function behind ANY /admin/{proxy+}: the
// replay service in-process (views, triage, replay), queue depths and
// health checks.
func (p *Platform) newAdmin() {
	env := p.replayEnv()
	env[wire.EnvDLQURLs] = p.queueURLs(true)
	env[adminfn.EnvKeySecretARN] = p.Secrets.AdminAPIKey.SecretArn()
	env[wire.EnvPurgeTable] = p.Tables[table.Purge.Name].TableName()
	adminTable := p.Tables[table.Admin.Name]
	env[adminfn.EnvAdminTable] = adminTable.TableName()
	// Pause and resume are applied at once (an asynchronous invoke of the
	// subscriber-health function).
	p.allowNotifyHealthEnv(env)
	f := p.newFunction(fnSpec{
		ID:          "AdminApi",
		Binary:      RoleAdminAPI,
		Name:        "admin-api",
		Description: "Operator API (/admin/*): health, queues, events, incidents, triage, replay",
		Timeout:     adminfn.FunctionTimeout,
		MemoryMB:    256,
		Env:         env,
	})
	p.allowReplay(f)
	allow(f.Role, []string{"lambda:InvokeFunction"}, p.healthFunctionArn())
	var queues []*string
	for _, tp := range p.Topology.Topics {
		queues = append(queues, p.Queues[tp.Name].Queue.QueueArn(), p.Queues[tp.Name].DLQ.QueueArn())
	}
	allow(f.Role, []string{"sqs:GetQueueAttributes"}, append(queues, p.Jobs.Queue.QueueArn())...)
	allow(f.Role, []string{"dynamodb:DescribeTable"}, p.Tables[table.Events.Name].TableArn(), p.Tables[table.Incidents.Name].TableArn(), p.Tables[table.Purge.Name].TableArn(), p.Tables[table.Jobs.Name].TableArn(), adminTable.TableArn())
	// The console's sessions (started, read, touched, ended: an update)
	// and each address's failed sign-ins (read, conditionally put). No
	// delete: items expire by TTL.
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, adminTable.TableArn())
	// /admin/purge: jobs (GetItem), today's rollups and dead letters (Query).
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:Query"}, p.Tables[table.Purge.Name].TableArn())
	allow(f.Role, []string{"secretsmanager:GetSecretValue"}, p.Secrets.AdminAPIKey.SecretArn())
	// The console's overview reads the consumers' delivery metrics (their
	// EMF lines, in this stage's dimension). GetMetricData supports no
	// resource-level permission.
	f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("cloudwatch:GetMetricData"), Resources: jsii.Strings("*"),
	}))
	suppressWildcard(f.Role, `^Resource::\*$`,
		"cloudwatch:GetMetricData supports no resource-level permissions (only '*'); it reads metric values only. The admin function asks for the consumers' delivery metrics of its own stage (the Stage dimension) for the console's overview.")
	p.allowExportDownloads(f)
	p.route(f, awsapigatewayv2.HttpMethod_ANY, PathAdmin,
		"The admin function authenticates every request itself: Authorization: Bearer <key>, compared in constant time with the active keys of the admin-api-key secret (re-read every few minutes, so a rotation needs no redeploy). The route is throttled below the stage limit.")
	p.throttleRoute(adminRouteKey, adminRateLimit, adminBurst)
	// The operations console: the same function and key (a login form
	// trades it for an HttpOnly, Secure, SameSite=Strict session cookie;
	// state changes carry a CSRF token).
	consoleAuthz := "The console authenticates every request itself: a session cookie minted by its login form from an active admin key (a random session id, HMAC-signed, recorded server-side in the admin table so sign-out ends it everywhere; 8 hours absolute, 1 hour idle; HttpOnly, Secure, SameSite=Strict), or Authorization: Bearer <key>; every state-changing form carries a CSRF token bound to the session; failed sign-ins back off per source address. Throttled like the admin routes."
	p.routeAs(f, "AdminConsole", awsapigatewayv2.HttpMethod_ANY, PathConsole, consoleAuthz)
	p.routeAs(f, "AdminConsoleProxy", awsapigatewayv2.HttpMethod_ANY, PathConsole+"/{proxy+}", consoleAuthz)
	p.throttleRoute("ANY "+PathConsole, adminRateLimit, adminBurst)
	p.throttleRoute("ANY "+PathConsole+"/{proxy+}", adminRateLimit, adminBurst)
}
