// Package envconf reads typed settings from environment variables for the
// per-function config structs: each getter returns the default when the
// variable is unset and collects a readable error when it is malformed, so a
// function fails fast at cold start with every problem listed at once.
package envconf
