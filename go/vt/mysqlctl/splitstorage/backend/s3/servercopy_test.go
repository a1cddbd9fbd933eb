package s3_test

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/s3"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// An object above what one CopyObject takes (5 GB on S3; 1 MiB here) is
// copied by the server in UploadPartCopy ranges: counted at the server,
// every range is one PUT to the destination and nothing of the source is
// downloaded; the copy reads back equal.
func TestServerCopyInParts(t *testing.T) {
	base := splitstoragetest.Start(t, splitstorage.BackendS3)
	p := splitstoragetest.NewFaultProxy(t, base.Addr)
	srv := base.WithProxy(p)
	srv.Setenv(t)
	ctx := context.Background()
	open := func(prefix string) *s3.Backend {
		c := srv.Config
		b, err := s3.New(ctx, s3.Config{Endpoint: c.S3.Endpoint, Region: c.S3.Region, Bucket: c.S3.Bucket, Prefix: prefix,
			ForcePathStyle: c.S3.ForcePathStyle, MaxCopyObject: 1 << 20, CopyPartSize: 5 << 20})
		require.NoError(t, err)
		return b
	}
	src, dst := open("src"), open("dst")

	big := make([]byte, 12<<20+3) // 3 ranges: 5 MiB, 5 MiB, 2 MiB + 3
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	small := []byte("one CopyObject")
	for key, data := range map[string][]byte{"big": big, "small": small} {
		crc := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
		require.NoError(t, src.Put(ctx, key, bytes.NewReader(data), int64(len(data)), backend.PutOptions{CRC32C: crc}))
	}

	before := len(p.Seen())
	for key, size := range map[string]int{"big": len(big), "small": len(small)} {
		copied, err := dst.CopyFrom(ctx, src, key, int64(size), backend.PutOptions{})
		require.NoError(t, err, key)
		assert.True(t, copied, key)
	}
	var rangePuts, sourceGets int
	for _, r := range p.Seen()[before:] {
		if r == "PUT /"+srv.Config.S3.Bucket+"/dst/big" {
			rangePuts++
		}
		if strings.HasPrefix(r, "GET ") && strings.Contains(r, "/src/") {
			sourceGets++
		}
	}
	assert.Equal(t, 3, rangePuts, "one UploadPartCopy per range: %v", p.Seen()[before:])
	assert.Zero(t, sourceGets)

	for key, want := range map[string][]byte{"big": big, "small": small} {
		rc, err := dst.Get(ctx, key, 0, -1)
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), key)
	}

	// A source that is not there fails, and leaves no multipart upload behind.
	_, err := dst.CopyFrom(ctx, src, "missing", 8<<20, backend.PutOptions{})
	require.Error(t, err)
	_, err = dst.Stat(ctx, "missing")
	assert.ErrorIs(t, err, backend.ErrNotExist)
}
