// Package table defines the platform's DynamoDB tables once: keys, global
// secondary indexes, TTL attribute and the attribute names the adapters key
// on. The local emulator kit provisions from these definitions and the CDK app
// synthesizes them, so local and deployed tables cannot drift.
package table
