// Package secret owns the active-secrets model: a Store loads every secret
// a delivery may be signed with right now (providers roll secrets with an
// overlap window), a Keyring caches one with a lazy refresh, List is a fixed
// set (local development and tests), and ParseList reads the stored value
// format (a JSON list). A store may hold several sources' secrets
// (ParseSources: a JSON object of lists by source), each read through its
// Source view. The Secrets Manager store is internal/aws/smsecret.
package secret
