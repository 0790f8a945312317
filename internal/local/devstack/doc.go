// Package devstack runs the whole platform on one machine (`make dev`): it
// starts the embedded emulators (internal/local/awslocal) — or uses real endpoints
// when AWS_ENDPOINT_URL or a profile is given — provisions every table,
// queue and bucket from the same topology and table definitions the CDK app
// uses, and runs every function's real handler on one HTTP address: HTTP
// routes converted to API Gateway HTTP API events, the Lambda Invoke API
// path (so producers use the real AWS SDK clients locally), an SQS
// event-source poller per queue and EventBridge-style schedules. It also
// serves the local HTTP subscriber sink (/__deliveries) the HTTP consumers
// deliver to. The address serves from the moment it listens, but until the
// stack is ready every request other than /healthz and the stand-ins
// start-up itself calls is answered 503 "starting" with Retry-After
// (starting.go), never a 404 from a route not registered yet.
//
// Every function of internal/wire/catalog runs from its descriptor
// (functions.go): its wiring, its triggers and schedules with their inputs
// (Stack.Schedules is the table), and the environment the CDK app would
// give it; fn_<name>.go adds what the stack decides itself for a function
// (locals: local defaults, an alert topic it creates, maps kept in its
// SSM). Consumers and the purge consumer's local mode register themselves
// (Registrar).
//
// Every invocation, event source poll and cold start is attributed to its
// function (costmodel.Attribute); with EVP_IAM_RECORD set (`make test`) the
// stack records its functions' AWS calls for `make iam-check` (iam.go,
// which also maps the stack's resource names onto a stage's, a function's
// through its descriptor).
package devstack
