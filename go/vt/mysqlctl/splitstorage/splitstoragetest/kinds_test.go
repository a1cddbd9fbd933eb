package splitstoragetest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// TestKindsAreEveryBackend: every backend the storage has is in Kinds, so
// every test that runs "on every backend" runs on it.
func TestKindsAreEveryBackend(t *testing.T) {
	assert.ElementsMatch(t, splitstorage.BackendNames(), All())
	assert.NotContains(t, Remote(), splitstorage.BackendFile)
}
