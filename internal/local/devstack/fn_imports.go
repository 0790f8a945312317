package devstack

import "github.com/siteswarm/eventplatform/internal/wire/importtriggerfn"

// FunctionImportTrigger turns the bucket's S3 event notifications for
// imports/ into file-import jobs: it runs on the imports queue, where the
// local S3 sends them (awslocal.Provision configures the bucket as the CDK
// app does, from topology.BucketNotifications), so a file put under
// imports/<tenant>/ starts its import.
const FunctionImportTrigger = importtriggerfn.Name
