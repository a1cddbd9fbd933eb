package gcs_test

import (
	"testing"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/backendtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestConformance runs the backend suite against a real server on 127.0.0.1.
func TestConformance(t *testing.T) {
	backendtest.Run(t, splitstoragetest.StartBackend(t, splitstorage.BackendGCS))
}
