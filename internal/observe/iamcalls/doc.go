// Package iamcalls records the AWS calls each function makes as IAM's
// authorizer sees them: for every SDK call, the (action, resource ARN,
// condition keys) requests AWS evaluates against the caller's role. A
// TransactWriteItems is one dynamodb:PutItem/UpdateItem/DeleteItem/
// ConditionCheckItem per item on its table, a PartiQL statement is
// dynamodb:PartiQLSelect/Insert/Update/Delete, a Query on an index is on
// the index's ARN, Batch* calls are per table, an S3 GetObject or
// DeleteObject with a version id is s3:GetObjectVersion or
// s3:DeleteObjectVersion and a ListObjectVersions is s3:ListBucketVersions
// on the bucket with its s3:prefix, SQS calls are on the queue's ARN,
// Lambda invokes on the function's, event source mapping calls on the
// mapping's (Expand).
//
// Whose call it is comes from the cost meter's attribution seam
// (costmodel.Attribute / FunctionOf): the local stack marks each
// invocation's context, its event source mapping's polls and its cold
// start. A Recorder is an SDK middleware on the stack's clients; resource
// names are written as the stage deploys them (a Namer maps the local
// stack's names onto placeholders such as ${Stage}-events), so the IAM
// check (internal/local/iamcheck, `make iam-check`) evaluates them against
// the synthesized template's roles. The local stack writes a recording per
// stack to the directory EVP_IAM_RECORD names (`make test` sets it).
package iamcalls
