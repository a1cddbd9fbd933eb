package splitstorage_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestReadFileRange reads ranges of files in the clear and encrypted, on
// local disk and S3: the bytes are the file's, at every kind of boundary;
// only the blocks that hold the range are read (a part or block outside it
// may be missing or damaged); a range past the end is refused.
func TestReadFileRange(t *testing.T) {
	for _, kind := range splitstoragetest.LocalAndRemote() {
		t.Run(kind, func(t *testing.T) {
			srv := splitstoragetest.Start(t, kind)
			srv.Setenv(t)
			for _, encrypted := range []bool{false, true} {
				name := "clear"
				if encrypted {
					name = "encrypted"
				}
				t.Run(name, func(t *testing.T) { runReadFileRange(t, srv, encrypted) })
			}
		})
	}
}

func runReadFileRange(t *testing.T, srv *splitstoragetest.Server, encrypted bool) {
	ctx := context.Background()
	c := srv.Config
	c.PartSize = 1 << 20
	block, plainPart := int64(256<<10), c.PartSize
	if encrypted {
		c.EncryptionKeyFile = splitstoragetest.KeyFile(t, "k1")
		block -= crypt.Overhead
		plainPart = 4 * block
	}
	s := newStorage(t, c)
	be, err := splitstorage.OpenBackend(ctx, c)
	require.NoError(t, err)
	dir, name := "ks/0", "ranges-clear"
	if encrypted {
		name = "ranges-encrypted"
	}
	data := plantedData(7, 3*plainPart+12345)
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f", bytes.NewReader(data), rand.New(rand.NewPCG(3, 4))))
	require.NoError(t, writeFile(ctx, bh, "empty", bytes.NewReader(nil), rand.New(rand.NewPCG(3, 4))))
	require.NoError(t, bh.EndBackup(ctx))
	h := findBackup(t, s, dir, name).(*splitstorage.Handle)

	read := func(file string, off, n int64) ([]byte, error) {
		r, err := h.ReadFileRange(ctx, file, off, n)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	size := int64(len(data))
	ranges := [][2]int64{{0, 0}, {0, size}, {size, 0}, {0, 1}, {size - 1, 1}, {block - 1, 2}, {block, block},
		{plainPart - 1, 2}, {plainPart, plainPart}, {2*plainPart - 10, plainPart + 20}, {3 * plainPart, size - 3*plainPart}}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 40 {
		off := rng.Int64N(size + 1)
		ranges = append(ranges, [2]int64{off, rng.Int64N(size - off + 1)})
	}
	for _, rg := range ranges {
		got, err := read("f", rg[0], rg[1])
		require.NoError(t, err, "range %v", rg)
		require.True(t, bytes.Equal(data[rg[0]:rg[0]+rg[1]], got), "range %v: %d bytes back", rg, len(got))
	}
	got, err := read("empty", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = read("f", size-10, 11)
	assert.ErrorContains(t, err, "goes past the end of the file")
	_, err = read("f", -1, 5)
	assert.ErrorContains(t, err, "invalid range")

	// Outside the range, parts and blocks are not read: part 1 gone and
	// block 0 of part 3 damaged, a range in block 2 of part 3 still reads.
	require.NoError(t, be.Delete(ctx, splitstorage.PartKey(dir, name, "f", 1)))
	p3 := splitstoragetest.Get(t, be, splitstorage.PartKey(dir, name, "f", 3))
	p3[100] ^= 1
	splitstoragetest.Put(t, be, splitstorage.PartKey(dir, name, "f", 3), p3)
	off := 2*plainPart + 2*block + 7
	got, err = read("f", off, 1000)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data[off:off+1000], got))
	_, err = read("f", 2*plainPart+5, 10)
	assert.ErrorContains(t, err, "part 3")
	assert.ErrorContains(t, err, "checksum mismatch in bytes 0..")
	_, err = read("f", 10, 10)
	assert.ErrorContains(t, err, "part 1")
	assert.ErrorContains(t, err, "part missing")
}
