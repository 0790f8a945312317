package consume_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := awslocaltest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
