package azure_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/azure"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// A part larger than one Put Blob takes goes up as staged blocks committed at
// once: read back whole and by ranges across block boundaries, never over an
// existing blob, and a retried Put (the same reader again) gives the same blob.
func TestAzureLargePartAsBlocks(t *testing.T) {
	srv := splitstoragetest.StartAzure(t)
	c := config(srv.Config)
	c.SingleUpload, c.BlockSize = 1<<20, 1<<20+7 // blocks of an odd size
	be, err := azure.New(c)
	require.NoError(t, err)
	ctx := context.Background()

	data := make([]byte, 5<<20+123)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	r := bytes.NewReader(data)
	require.NoError(t, be.Put(ctx, "big", r, int64(len(data)), backend.PutOptions{IfNotExists: true}))
	read := func(off, n int64) []byte {
		rc, err := be.Get(ctx, "big", off, n)
		require.NoError(t, err)
		defer rc.Close()
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		return b
	}
	assert.Equal(t, data, read(0, -1))
	assert.Equal(t, data[1<<20:1<<20+20], read(1<<20, 20), "across the first block boundary")
	assert.Equal(t, data[len(data)-5:], read(int64(len(data)-5), -1))
	info, err := be.Stat(ctx, "big")
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), info.Size)

	_, err = r.Seek(0, io.SeekStart)
	require.NoError(t, err)
	err = be.Put(ctx, "big", r, int64(len(data)), backend.PutOptions{IfNotExists: true})
	require.ErrorIs(t, err, backend.ErrExists)
	_, err = r.Seek(0, io.SeekStart)
	require.NoError(t, err)
	require.NoError(t, be.Put(ctx, "big", r, int64(len(data)), backend.PutOptions{}))
	assert.Equal(t, data, read(0, -1))
}

// A key file that is missing or not a key fails naming the flag, never
// showing what the file holds.
func TestAzureKeyFileErrors(t *testing.T) {
	c := azure.Config{Account: "acct", Container: "c"}
	open := func() error {
		_, err := azure.New(c)
		return err
	}
	c.KeyFile = filepath.Join(t.TempDir(), "missing")
	require.ErrorContains(t, open(), "--split-storage-azure-key-file")

	c.KeyFile = filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(c.KeyFile, []byte("not base64 !!! secret-looking-text"), 0o600))
	err := open()
	require.ErrorContains(t, err, "--split-storage-azure-key-file")
	assert.NotContains(t, err.Error(), "secret-looking-text")
}

// config is the Azure part of a split storage configuration.
func config(c splitstorage.Config) azure.Config {
	return azure.Config{Account: c.Azure.Account, Container: c.Azure.Container, Prefix: c.Azure.Prefix, Endpoint: c.Azure.Endpoint, KeyFile: c.Azure.KeyFile}
}
