package splitstorage_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
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

// TestLegacyS3FindsTheTakenCredentials: with Vitess's s3 storage as the
// legacy one, the credentials taken out of the environment reach it the
// SDK's default way (a shared credentials file in this process's memory,
// only this user can read, named by AWS_SHARED_CREDENTIALS_FILE), and no
// environment variable holds the secret; without a legacy s3 storage no
// file is made.
func TestLegacyS3FindsTheTakenCredentials(t *testing.T) {
	const id, secret = "AKIDLEGACYTEST", "LEGACY-SECRET-5678"
	for _, legacy := range []string{"s3", ""} {
		t.Run("legacy="+legacy, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", id)
			t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
			t.Setenv("AWS_SESSION_TOKEN", "")
			t.Setenv("AWS_PROFILE", "")
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "")
			os.Unsetenv("AWS_SHARED_CREDENTIALS_FILE")
			t.Cleanup(s3.ForgetTakenCredentials)
			tmp := t.TempDir()
			remove, err := splitstorage.TakeEnvCredentials(splitstorage.Config{Backend: splitstorage.BackendS3, Legacy: legacy}, tmp)
			require.NoError(t, err)
			for _, kv := range os.Environ() {
				assert.NotContains(t, kv, secret)
			}
			path, shared := os.LookupEnv("AWS_SHARED_CREDENTIALS_FILE")
			if legacy == "" {
				assert.False(t, shared, "no file without a legacy s3 storage")
				remove()
				return
			}
			require.True(t, shared)
			// In this process's memory only: gone with it however it ends
			// (kill -9 too), nothing on a disk, nothing under tmp.
			target, err := os.Readlink(path)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(target, "/memfd:vtfifo-aws-credentials"), "%s -> %s", path, target)
			entries, err := os.ReadDir(tmp)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing written under tmp")
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
			cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"))
			require.NoError(t, err)
			creds, err := cfg.Credentials.Retrieve(context.Background())
			require.NoError(t, err)
			assert.Equal(t, id, creds.AccessKeyID)
			assert.Equal(t, secret, creds.SecretAccessKey)
			remove()
			b, _ := os.ReadFile(path) // closed: gone, or another file under the number
			assert.NotContains(t, string(b), secret)
			_, shared = os.LookupEnv("AWS_SHARED_CREDENTIALS_FILE")
			assert.False(t, shared)
		})
	}
}
