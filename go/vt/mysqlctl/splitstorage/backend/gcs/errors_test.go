package gcs

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/api/googleapi"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// TestRefusalsAreAccess: GCS's 401 and 403 are access (never damage) and
// not retried; a 404 is a missing object, a 503 retried.
func TestRefusalsAreAccess(t *testing.T) {
	for _, code := range []int{401, 403} {
		err := gcsErr(&googleapi.Error{Code: code, Message: "denied"})
		assert.True(t, unreadable.Is(err), code)
		assert.True(t, errors.Is(err, backend.ErrPermanent), code)
	}
	assert.True(t, errors.Is(gcsErr(&googleapi.Error{Code: 404}), backend.ErrNotExist))
	assert.False(t, unreadable.Is(gcsErr(&googleapi.Error{Code: 404})))
	assert.True(t, backend.IsTransient(gcsErr(&googleapi.Error{Code: 503})))
}
