// Package blob is the S3 adapter for blob storage: claim-checked payloads,
// incident payloads and archives.
package blob
