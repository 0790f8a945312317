package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
)

// Admin API routing (adminfn.Function's routes): one proxy route, and
// the operations console's; the function routes and authenticates every
// request itself (constant-time bearer check against the admin key
// secret).
const (
	PathAdmin   = adminfn.PathAdmin
	PathConsole = adminfn.PathConsole
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
	f := p.newFunction(p.spec(adminfn.Function, env))
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
	p.routes(f)
}
