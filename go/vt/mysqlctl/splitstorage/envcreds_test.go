package splitstorage_test

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/s3"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestTakeEnvCredentials: the AWS credentials leave the process environment
// (Vitess logs the environment of the mysqld it starts, and children
// inherit it) and the S3 backend still signs with them.
func TestTakeEnvCredentials(t *testing.T) {
	srv := splitstoragetest.StartS3WithSecret(t, "TAKEN-SECRET-1234")
	srv.Setenv(t)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Cleanup(s3.ForgetTakenCredentials)
	require.True(t, s3.TakeEnvCredentials())
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		_, set := os.LookupEnv(v)
		assert.False(t, set, "%s still in the environment", v)
	}
	for _, kv := range os.Environ() {
		assert.NotContains(t, kv, "TAKEN-SECRET-1234")
	}
	assert.False(t, s3.TakeEnvCredentials(), "nothing left to take")

	ctx := context.Background()
	s, err := splitstorage.New(srv.Config)
	require.NoError(t, err)
	h, err := s.StartBackup(ctx, "ks/0", "b")
	require.NoError(t, err, "the S3 backend signs with the credentials taken")
	w, err := h.AddFile(ctx, "MANIFEST", 0)
	require.NoError(t, err)
	_, err = io.WriteString(w, "x")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, h.EndBackup(ctx))
	bhs, err := s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 1)

	// Without them (and nothing else in the chain) it cannot.
	s3.ForgetTakenCredentials()
	s2, err := splitstorage.New(srv.Config)
	require.NoError(t, err)
	_, err = s2.ListBackups(ctx, "ks/0")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "TAKEN-SECRET-1234")
}
