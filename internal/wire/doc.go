// Package wire builds each function's handler from its typed config and AWS
// clients. The Lambda mains (functions/*) and the local stack call the same
// constructors, so what runs locally is the graph that runs in AWS. Config
// structs, their environment variable names (which the CDK app sets) and
// their validation live here too.
package wire
