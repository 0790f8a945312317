// Package platform is the event platform's CDK stack: one stack per stage
// (Stage, from cdk.json context and -c overrides) with the DynamoDB tables of
// internal/aws/table, a queue and DLQ per topic of internal/topology, the archive
// bucket, every Lambda function from its descriptor (internal/wire/catalog:
// construct id, name, binary, memory, timeout, routes, event source
// mappings and schedules with their inputs, triggers.go; environment from
// the internal/wire constants, only variables the function reads; a
// least-privilege role each), the HTTP API, the replay state
// machine, the alert topic, alarms and the /evp/<stage>/… discovery
// parameters. Check adds the cdk-nag AwsSolutions pack; every suppression
// sits next to its resource with its reason.
package platform
