// Package awslocal is the local emulator kit shared by the platform's tests
// and `make dev` (architecture §8).
//
// Every AWS API the platform uses is served by a real third-party emulator and
// reached through the real aws-sdk-go-v2 clients with a BaseEndpoint override;
// nothing is mocked at the SDK level, so serialisation, error decoding,
// retries and middleware all run exactly as in production:
//
//   - DynamoDB: minidyn (HTTP mode) behind a small handler of ours that papers
//     over its gaps (serialised requests, ACTIVE status, TTL and ListTables
//     APIs, the 400 KB item limit, a loud rejection of REMOVE);
//   - SQS and SNS: fauxqs, a node child process on a random port;
//   - S3: gofakes3 with the in-memory backend, path-style addressing;
//
// Faults and Calls are SDK middlewares (APIOptions) for fault injection and
// API call counting. Provision creates the tables, queues and bucket of a
// topology under a prefix, against the emulators or real AWS alike.
//
// It is the emulator runtime only (the local stack runs it): the test
// helpers built on it are in awslocaltest, the way net/http/httptest sits
// beside net/http, and the local Lambda service is internal/local/lambdalocal.
//
// The emulator packages are named <service>local: awslocal (the data
// services: DynamoDB, SQS, SNS, S3), lambdalocal (Lambda) and stepfnlocal
// (Step Functions); their test helpers add "test" (awslocaltest).
package awslocal
