// Command import-trigger consumes the imports queue, where the platform
// bucket sends its S3 event notifications for imports/: each file created
// under imports/<tenant>/ starts a file-import job (docs/jobs.md), once per
// uploaded version however often S3 repeats the notification.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/importtriggerfn"
)

func main() { wire.Main(importtriggerfn.Function) }
