package s3_test

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/backendtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// versions returns the version ids of key, newest first, as the store lists them.
func versions(t *testing.T, srv *splitstoragetest.Server, key string) []string {
	t.Helper()
	out, err := srv.S3Client.ListObjectVersions(context.Background(), &awss3.ListObjectVersionsInput{
		Bucket: aws.String(splitstoragetest.Bucket), Prefix: aws.String(srv.Config.S3.Prefix + "/" + key)})
	require.NoError(t, err)
	var ids []string
	for _, v := range out.Versions {
		ids = append(ids, aws.ToString(v.VersionId))
	}
	return ids
}

// deleteVersion deletes one version of key through the store's own API: on a
// versioned bucket only this removes bytes (a plain DELETE adds a marker).
func deleteVersion(srv *splitstoragetest.Server, key, id string) error {
	_, err := srv.S3Client.DeleteObject(context.Background(), &awss3.DeleteObjectInput{
		Bucket: aws.String(splitstoragetest.Bucket), Key: aws.String(srv.Config.S3.Prefix + "/" + key), VersionId: aws.String(id)})
	return err
}

func versionBytes(t *testing.T, srv *splitstoragetest.Server, key, id string) []byte {
	t.Helper()
	out, err := srv.S3Client.GetObject(context.Background(), &awss3.GetObjectInput{
		Bucket: aws.String(splitstoragetest.Bucket), Key: aws.String(srv.Config.S3.Prefix + "/" + key), VersionId: aws.String(id)})
	require.NoError(t, err)
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	return b
}

func put(t *testing.T, be backend.Backend, key string, body []byte, l backend.Lock) {
	t.Helper()
	require.NoError(t, be.Put(context.Background(), key, bytes.NewReader(body), int64(len(body)), backend.PutOptions{Lock: l, CRC32C: crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))}))
}

// TestObjectLockIsEnforcedByTheStore locks objects through the backend on
// versitygw, which enforces S3 Object Lock, and then asks the store itself
// to remove or replace their bytes: deleting a locked version is refused
// (compliance, governance without bypass, a legal hold), the version
// survives an overwrite, and a lock extends but never shortens.
func TestObjectLockIsEnforcedByTheStore(t *testing.T) {
	srv := splitstoragetest.StartS3ObjectLock(t)
	srv.Setenv(t)
	ctx := context.Background()
	be, err := splitstorage.OpenBackend(ctx, srv.Config)
	require.NoError(t, err)
	lk, ok := backend.LockerOf(be)
	require.True(t, ok, "the S3 backend locks objects")
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)

	put(t, be, "free", []byte("free"), backend.Lock{})
	put(t, be, "compliance", []byte("kept"), backend.Lock{Until: until, Mode: backend.LockCompliance})
	put(t, be, "governance", []byte("kept"), backend.Lock{Until: until, Mode: backend.LockGovernance})
	put(t, be, "held", []byte("kept"), backend.Lock{})
	require.NoError(t, lk.Lock(ctx, "held", backend.Lock{LegalHold: true}))

	got, err := lk.LockOf(ctx, "compliance")
	require.NoError(t, err)
	require.Equal(t, backend.Lock{Until: until, Mode: backend.LockCompliance}, got)
	got, err = lk.LockOf(ctx, "held")
	require.NoError(t, err)
	require.Equal(t, backend.Lock{LegalHold: true}, got)
	got, err = lk.LockOf(ctx, "free")
	require.NoError(t, err)
	require.True(t, got.IsZero(), "%v", got)

	// The control: an unlocked version goes.
	require.NoError(t, deleteVersion(srv, "free", versions(t, srv, "free")[0]))
	for _, key := range []string{"compliance", "governance", "held"} {
		id := versions(t, srv, key)[0]
		require.Error(t, deleteVersion(srv, key, id), "%s: the store deleted a locked version", key)
		// An overwrite makes a new version; the locked one keeps its bytes.
		put(t, be, key, []byte("forged"), backend.Lock{})
		require.Equal(t, []byte("kept"), versionBytes(t, srv, key, id), key)
		require.Error(t, deleteVersion(srv, key, id), "%s: the store deleted a locked version after an overwrite", key)
	}

	// Extend, never shorten: an earlier date leaves the later one; a later one extends it.
	put(t, be, "extend-c", []byte("kept"), backend.Lock{Until: until, Mode: backend.LockCompliance})
	put(t, be, "extend-g", []byte("kept"), backend.Lock{Until: until, Mode: backend.LockGovernance})
	require.NoError(t, lk.Lock(ctx, "extend-c", backend.Lock{Until: until.Add(-30 * time.Minute), Mode: backend.LockGovernance}))
	got, err = lk.LockOf(ctx, "extend-c")
	require.NoError(t, err)
	require.Equal(t, until, got.Until)
	require.Equal(t, backend.LockCompliance, got.Mode)
	later := until.Add(24 * time.Hour)
	require.NoError(t, lk.Lock(ctx, "extend-g", backend.Lock{Until: later, Mode: backend.LockGovernance}))
	got, err = lk.LockOf(ctx, "extend-g")
	require.NoError(t, err)
	require.Equal(t, later, got.Until)
}

// TestLockerConformance runs the lock contract through our code on
// versitygw with Object Lock.
func TestLockerConformance(t *testing.T) {
	srv := splitstoragetest.StartS3ObjectLock(t)
	srv.Setenv(t)
	be, err := splitstorage.OpenBackend(context.Background(), srv.Config)
	require.NoError(t, err)
	backendtest.RunLocker(t, be)
}
