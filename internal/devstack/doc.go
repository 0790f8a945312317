// Package devstack runs the whole platform on one machine: it starts the
// embedded emulators (internal/localaws), provisions every table, queue and
// bucket from the same topology and table definitions the CDK app uses, and
// serves the functions' real handlers on one HTTP address, behind the Lambda
// Invoke API path so producers use the real AWS SDK clients locally.
package devstack
