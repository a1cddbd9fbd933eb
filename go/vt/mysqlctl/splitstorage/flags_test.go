package splitstorage_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/azure"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/gcs"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/s3"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

func parseFlags(t *testing.T, args ...string) error {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	splitstorage.RegisterFlags(fs)
	return fs.Parse(args)
}

func TestFlagDefaultsAndTheirChecks(t *testing.T) {
	t.Cleanup(func() { require.NoError(t, parseFlags(t)) }) // back to defaults

	require.NoError(t, parseFlags(t))
	d := splitstorage.FlagConfig()
	assert.Equal(t, splitstorage.DefaultConfig().PartSize, d.PartSize)
	assert.Equal(t, int64(256<<20), d.PartSize)
	// defaults fit the budget; only the root is missing
	err := splitstorage.FlagConfig().Validate()
	require.Error(t, err)
	assert.Equal(t, "split backup storage: invalid flags: --split-storage-root must be set when --split-storage-backend=file", err.Error())

	require.NoError(t, parseFlags(t, "--split-storage-root=/tmp/x", "--split-storage-part-size=64MiB", "--split-storage-memory-budget=1GiB"))
	assert.Equal(t, int64(64<<20), splitstorage.FlagConfig().PartSize)
	assert.Equal(t, int64(1<<30), splitstorage.FlagConfig().MemoryBudget)
	require.NoError(t, splitstorage.FlagConfig().Validate())

	for args, want := range map[string]string{
		"--split-storage-backend=tape": `invalid value "tape" for --split-storage-backend: ` +
			`allowed values are file, s3, gcs, azure`,
		"--split-storage-backend=azure --split-storage-azure-account=a": "--split-storage-azure-container must be set",
		"--split-storage-root=/x --split-storage-azure-endpoint=localhost:10000": `invalid value "localhost:10000" for ` +
			`--split-storage-azure-endpoint: allowed values are empty`,
		"--split-storage-part-size=512KiB --split-storage-root=/x": `invalid value "512KiB" for --split-storage-part-size: ` +
			`allowed values are 1MiB..5GiB`,
		"--split-storage-part-size=1048575 --split-storage-root=/x": `invalid value "1048575" for --split-storage-part-size: ` +
			`allowed values are 1MiB..5GiB`,
		"--split-storage-upload-concurrency=0 --split-storage-root=/x": `invalid value "0" for ` +
			`--split-storage-upload-concurrency: allowed values are 1..256`,
		"--split-storage-backend=s3": "--split-storage-s3-bucket must be set",
		"--split-storage-backend=s3 --split-storage-s3-bucket=b --split-storage-s3-sse=rot13": `invalid value "rot13" for --split-storage-s3-sse: ` +
			`allowed values are empty, AES256, aws:kms, aws:kms:dsse`,
		"--split-storage-root=/x --split-storage-s3-sse=rot13": `invalid value "rot13" for --split-storage-s3-sse: allowed values`,
		"--split-storage-root=/x --split-storage-s3-endpoint=localhost:9000": `invalid value "localhost:9000" for ` +
			`--split-storage-s3-endpoint: allowed values are empty (AWS) or an http:// or https:// URL`,
		"--split-storage-backend=gcs": "--split-storage-gcs-bucket must be set",
		"--split-storage-root=/x --split-storage-read-ahead=2": `invalid value "2" for --split-storage-read-ahead: ` +
			`allowed values are 1MiB..1GiB`,
		"--split-storage-root=/x --split-storage-spool-dir=/nonexistent/spool": `invalid value "/nonexistent/spool" for ` +
			`--split-storage-spool-dir: allowed values are empty (the system's temporary directory) or an existing directory`,
		"--split-storage-root=/x --split-storage-retry-max-attempts=0": `invalid value "0" for ` +
			`--split-storage-retry-max-attempts: allowed values are 1..100`,
		"--split-storage-root=/x --split-storage-retry-max-backoff=100ms": `invalid value "100ms" for ` +
			`--split-storage-retry-max-backoff: allowed values are a duration >= --split-storage-retry-initial-backoff (500ms)`,
	} {
		require.NoError(t, parseFlags(t, strings.Fields(args)...), args)
		err := splitstorage.FlagConfig().Validate()
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
	err = parseFlags(t, "--split-storage-part-size=lots")
	require.ErrorContains(t, err, "split-storage-part-size")
	require.ErrorContains(t, err, "allowed values are 1MiB..5GiB")
	err = parseFlags(t, "--split-storage-read-ahead=two")
	require.ErrorContains(t, err, "split-storage-read-ahead")
	require.ErrorContains(t, err, "allowed values are 1MiB..1GiB")
	err = parseFlags(t, "--split-storage-request-timeout=30")
	require.ErrorContains(t, err, "split-storage-request-timeout")
	require.ErrorContains(t, err, "allowed values are a duration > 0")
	err = parseFlags(t, "--split-storage-s3-force-path-style=yes")
	require.ErrorContains(t, err, "split-storage-s3-force-path-style")
	require.ErrorContains(t, err, "allowed values are true, false")
	require.NoError(t, parseFlags(t, "--split-storage-s3-force-path-style"))
	assert.True(t, splitstorage.FlagConfig().S3.ForcePathStyle, "a bare boolean flag means true")
}

// TestRegisteredStorage uses the "split" storage registered in
// backupstorage.BackupStorageMap, configured only by flags, and checks it
// validates lazily on first use.
func TestRegisteredStorage(t *testing.T) {
	t.Cleanup(func() { require.NoError(t, parseFlags(t)) })
	bs, ok := backupstorage.BackupStorageMap["split"]
	require.True(t, ok)
	ctx := context.Background()

	require.NoError(t, parseFlags(t, "--split-storage-backend=file", "--split-storage-root=", "--split-storage-part-size=1MiB",
		"--split-storage-memory-budget=8MiB"))
	s := bs.WithParams(backupstorage.NoParams())
	_, err := s.StartBackup(ctx, "ks/0", "x")
	require.ErrorContains(t, err, "--split-storage-root must be set")
	require.NoError(t, s.Close())

	srv := splitstoragetest.Local(t)
	require.NoError(t, parseFlags(t, srv.Config.Args()...))
	s = bs.WithParams(backupstorage.NoParams())
	defer s.Close()
	bh, err := s.StartBackup(ctx, "ks/0", "2026-05-01.flags")
	require.NoError(t, err)
	w, err := bh.AddFile(ctx, "MANIFEST", -1)
	require.NoError(t, err)
	_, err = w.Write([]byte(`{"BackupMethod":"fifo"}`))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, bh.EndBackup(ctx))
	bhs, err := s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 1)
	r, err := bhs[0].ReadFile(ctx, "MANIFEST")
	require.NoError(t, err)
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Equal(t, `{"BackupMethod":"fifo"}`, string(b))
}

func TestEncryptionFlags(t *testing.T) {
	c := splitstoragetest.Local(t).Config
	c.EncryptionKeyFile = splitstoragetest.KeyFile(t, "k1")
	require.NoError(t, c.Validate())

	c.PartSize = 1<<20 + 4096
	err := c.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `invalid value "1028KiB" for --split-storage-part-size: allowed values are a multiple of 256KiB (the encryption `+
		`frame) in 1MiB..5GiB when --split-storage-encryption-key-file is set`)

	c.PartSize = 1 << 20
	secret := "c2VjcmV0LWtleS1ieXRlcy10aGF0LWFyZS10b28tc2hvcnQ=" // 31 bytes
	c.EncryptionKeyFile = t.TempDir() + "/keys"
	require.NoError(t, os.WriteFile(c.EncryptionKeyFile, []byte("k1 "+secret+"\n"), 0o600))
	err = c.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "for --split-storage-encryption-key-file")
	assert.Contains(t, err.Error(), `line 1: the key of ID "k1" is not the base64 of 32 bytes`)
	assert.NotContains(t, err.Error(), secret[:10], "the key is never in an error")
}

// Every backend's settings travel through their own flags: Args writes a
// Config as flags and ConfigFromArgs reads it back whole, whatever the
// backend, so a setting a backend declares is never lost on the way to a
// process (a copy's destination, a test's vtbackup).
func TestArgsRoundTripEveryBackend(t *testing.T) {
	// Every backend round-trips: those below with values of their own, any
	// other (a new one) with its defaults.
	assert.Subset(t, splitstorage.BackendNames(), []string{"file", "s3", "gcs", "azure"})
	keyFile := filepath.Join(t.TempDir(), "azure.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("a2V5"), 0o600))
	c := splitstoragetest.TestConfig()
	c.Backend = splitstorage.BackendAzure
	c.PartSize, c.UploadLimit, c.SpoolDir = 3<<20+5, 7<<20, t.TempDir()
	c.File = local.Config{Root: "/r"}
	c.S3 = s3.Config{Endpoint: "http://h:1", Region: "eu-west-3", Bucket: "b", Prefix: "p", ForcePathStyle: true,
		SSE: "aws:kms", SSEKMSKeyID: "k", StorageClass: "STANDARD_IA"}
	c.GCS = gcs.Config{Bucket: "g", Prefix: "gp"}
	c.Azure = azure.Config{Account: "acc", Container: "ctr", Prefix: "ap", Endpoint: "http://h:2/acc", KeyFile: keyFile}
	back, err := splitstorage.ConfigFromArgs(c.Args())
	require.NoError(t, err)
	assert.Equal(t, c, back)
	assert.Equal(t, "azure://acc/ctr/ap", back.Location())
	back.Backend = "tape"
	assert.ErrorContains(t, back.Validate(), `invalid value "tape" for --split-storage-backend: allowed values are `+
		strings.Join(splitstorage.BackendNames(), ", "))
}

// TestSameStore: one bucket and prefix at two endpoints are two stores;
// what differs only in how it is read is one.
func TestSameStore(t *testing.T) {
	a := splitstorage.DefaultConfig()
	a.Backend, a.S3.Bucket, a.S3.Prefix, a.S3.Region, a.S3.Endpoint = splitstorage.BackendS3, "b", "p", "r", "http://127.0.0.1:1"
	b := a
	b.PartSize, b.UploadLimit = 8<<20, 1<<30
	require.True(t, a.SameStore(b))
	b.S3.Endpoint = "http://127.0.0.1:2"
	require.False(t, a.SameStore(b), "another endpoint")
	b = a
	b.S3.Prefix = "q"
	require.False(t, a.SameStore(b), "another prefix")
	l1, l2 := splitstorage.DefaultConfig(), splitstorage.DefaultConfig()
	l1.File.Root, l2.File.Root = "/x", "/x"
	require.True(t, l1.SameStore(l2))
	l2.File.Root = "/y"
	require.False(t, l1.SameStore(l2))
}
