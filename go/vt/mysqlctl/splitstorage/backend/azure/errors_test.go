package azure

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/stretchr/testify/assert"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// TestRefusalsAreAccess: Azure's 401 and 403 (and its authorization error
// codes) are access (never damage) and not retried; a 404 is a missing blob.
func TestRefusalsAreAccess(t *testing.T) {
	for _, re := range []*azcore.ResponseError{{StatusCode: 401}, {StatusCode: 403}, {StatusCode: 403, ErrorCode: "AuthorizationFailure"}} {
		err := azureErr(re)
		assert.True(t, unreadable.Is(err), re.StatusCode)
		assert.True(t, errors.Is(err, backend.ErrPermanent), re.StatusCode)
	}
	assert.True(t, errors.Is(azureErr(&azcore.ResponseError{StatusCode: 404}), backend.ErrNotExist))
	assert.False(t, unreadable.Is(azureErr(&azcore.ResponseError{StatusCode: 404})))
}
