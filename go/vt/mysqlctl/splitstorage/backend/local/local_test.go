package local_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/backendtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
)

func TestConformance(t *testing.T) {
	b, err := local.New(t.TempDir())
	require.NoError(t, err)
	backendtest.Run(t, b)
}
