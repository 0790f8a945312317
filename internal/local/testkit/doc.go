// Package testkit is the platform's shared test kit: a settable clock,
// JSON helpers and fixtures that build events the way ingest stores them,
// so tests do not each keep their own copy. Tests only: nothing outside
// _test.go files imports it.
package testkit
