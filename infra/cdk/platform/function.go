package platform

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/importtriggerfn"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// Function roles: the directories under functions/ (and bin/ after
// `make build`), each its function's descriptor's Binary
// (internal/wire/catalog). One binary serves every function of its role;
// the consumer kinds' roles are their descriptors' (consumerfn.Kind.Role).
var (
	RoleIngest           = ingestfn.Function.Binary
	RoleWebhookStripe    = webhookfn.Function.Binary
	RoleSweeper          = sweeperfn.Function.Binary
	RoleDLQArchiver      = dlqarchiverfn.Function.Binary
	RoleReplay           = replayfn.Function.Binary
	RoleAdminAPI         = adminfn.Function.Binary
	RolePurgeAPI         = purgeapifn.Function.Binary
	RoleJobsWorker       = jobsworkerfn.Function.Binary
	RoleJobsSweep        = jobsfn.SweepFunction.Binary
	RoleImportTrigger    = importtriggerfn.Function.Binary
	RoleSubscriberHealth = subscriberhealthfn.Function.Binary
	// RoleStripeEventBridge is deployed only on a stage with
	// stripeEventBridgeSource.
	RoleStripeEventBridge = stripeeventbridgefn.Function.Binary
)

// Roles lists every role the stack deploys a function for.
func Roles() []string { return catalog.Binaries() }

// fnSpec describes one Lambda function: its descriptor (construct id,
// binary, name, description, timeout, memory) and the environment the
// stack gives it.
type fnSpec struct {
	// ID is the construct id ("Ingest", "ConsumerBillingEvents").
	ID string
	// Binary is the function's role: its bootstrap is bin/<role>/bootstrap
	// (built from functions/<role>).
	Binary string
	// Name is the physical name under the stage prefix (evp-<stage>-<name>).
	Name        string
	Description string
	Timeout     time.Duration
	MemoryMB    int
	Env         map[string]*string
	// Descriptor is the function's (internal/wire).
	Descriptor wire.Function
}

// spec is a function's fnSpec from its descriptor, with env. The stack
// sets no variable the function does not read (wire.Function.Environment):
// one it forgot to read, or a name spelled differently on each side,
// fails the synth.
func (p *Platform) spec(fn wire.Function, env map[string]*string) fnSpec {
	if err := fn.Validate(); err != nil {
		panic(err.Error())
	}
	reads := fn.Environment(p.Topology)
	for _, k := range sortedKeys(env) {
		if !slices.Contains(reads, k) {
			panic(fmt.Sprintf("function %s: the stack sets %s, which it does not read (it reads %s)", fn.Name, k, strings.Join(reads, ", ")))
		}
	}
	return fnSpec{ID: fn.ID, Binary: fn.Binary, Name: fn.Name, Description: fn.Description, Timeout: fn.Timeout,
		MemoryMB: fn.MemoryMB, Env: env, Descriptor: fn}
}

// addEnvironment sets one more variable on a created function (one it
// reads, as for spec).
func (p *Platform) addEnvironment(f *Function, name string, value *string) {
	if !slices.Contains(f.Spec.Descriptor.Environment(p.Topology), name) {
		panic(fmt.Sprintf("function %s: the stack sets %s, which it does not read", f.Spec.Name, name))
	}
	f.Fn.AddEnvironment(jsii.String(name), value, nil)
}

// Function is a deployed function with its own execution role and log group.
type Function struct {
	Spec     fnSpec
	Fn       awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
}

// newFunction creates a Go Lambda (provided.al2023, arm64, bootstrap from
// the asset directory) with a role of its own that holds only what the
// caller grants, an explicit log group (retention, JSON logs at the stage's
// level) and active X-Ray tracing.
func (p *Platform) newFunction(s fnSpec) *Function {
	name := p.Stage.Prefix() + "-" + s.Name
	role := awsiam.NewRole(p.Stack, jsii.String(s.ID+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Execution role of " + name),
	})
	logGroup := awslogs.NewLogGroup(p.Stack, jsii.String(s.ID+"Logs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/lambda/" + name),
		Retention:     retentionDays[p.Stage.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	// CreateLogStream/PutLogEvents on this log group only.
	logGroup.GrantWrite(role)

	env := map[string]*string{}
	for k, v := range s.Env {
		env[k] = v
	}
	props := &awslambda.FunctionProps{
		FunctionName:          jsii.String(name),
		Description:           jsii.String(s.Description),
		Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:          awslambda.Architecture_ARM_64(),
		Handler:               jsii.String("bootstrap"),
		Code:                  awslambda.Code_FromAsset(jsii.String(p.asset(s.Binary)), nil),
		Role:                  role,
		LogGroup:              logGroup,
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel(p.Stage.LogLevel),
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		Tracing:               awslambda.Tracing_ACTIVE,
		Timeout:               duration(s.Timeout),
		MemorySize:            jsii.Number(float64(s.MemoryMB)),
		Environment:           &env,
	}
	if n := p.Stage.Reservation(s.Name); n > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(float64(n))
	}
	fn := awslambda.NewFunction(p.Stack, jsii.String(s.ID), props)
	// Active tracing makes CDK add xray:PutTraceSegments and
	// xray:PutTelemetryRecords on "*" to the role's default policy.
	suppressWildcard(role, `^Resource::\*$`,
		"X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions; this is the only '*' statement (asserted by the template tests).")
	f := &Function{Spec: s, Fn: fn, Role: role, LogGroup: logGroup}
	p.Functions[s.Name] = f
	return f
}

// asset is the directory holding the role's bootstrap binary.
func (p *Platform) asset(role string) string {
	dir := filepath.Join(p.AssetDir, role)
	if _, err := os.Stat(filepath.Join(dir, "bootstrap")); err != nil {
		panic(fmt.Sprintf("function %s: %s/bootstrap is missing: run `make build` first (%v)", role, dir, err))
	}
	return dir
}

var retentionDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS,
	5: awslogs.RetentionDays_FIVE_DAYS, 7: awslogs.RetentionDays_ONE_WEEK,
	14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS,
	120: awslogs.RetentionDays_FOUR_MONTHS, 150: awslogs.RetentionDays_FIVE_MONTHS,
	180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS,
	731: awslogs.RetentionDays_TWO_YEARS, 1096: awslogs.RetentionDays_THREE_YEARS,
	1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS,
	3288: awslogs.RetentionDays_NINE_YEARS, 3653: awslogs.RetentionDays_TEN_YEARS,
}
