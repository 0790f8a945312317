// Package secret supplies webhook signing secrets: Manager reads a JSON list
// of active secrets from AWS Secrets Manager (the deployed path), List is a
// fixed in-process list (local development and tests). Secrets Manager is
// not emulated locally, so the adapter is kept to one thin SDK call and the
// parsing it relies on is a plain function with its own tests.
package secret
