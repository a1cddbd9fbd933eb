// Package backendtest is the conformance suite every backend.Backend passes
// (the file, S3, GCS and Azure backends, and the retrying wrapper over a
// backend that fails on purpose), and Faulty, that backend.
package backendtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Run checks that b keeps the contract of backend.Backend. Every key it
// writes is under a prefix of its own, which it removes at the end, so
// suites may share a bucket.
func Run(t *testing.T, b backend.Backend) {
	s := &suite{ctx: context.Background(), b: b, root: "backendtest-" + randomHex(4) + "/"}
	t.Cleanup(func() {
		infos, err := b.List(s.ctx, s.root, false)
		if err != nil {
			return
		}
		for _, o := range infos {
			_ = b.Delete(s.ctx, o.Key)
		}
	})
	for _, c := range []struct {
		name  string
		check func(*testing.T)
	}{
		{"put-get-ranges", s.putGetRanges},
		{"missing", s.missing},
		{"if-not-exists", s.ifNotExists},
		{"list", s.list},
		{"delete", s.delete},
		{"parallel", s.parallel},
		{"string", s.string},
	} {
		t.Run(c.name, c.check)
	}
}

// suite is one Run: the backend and the prefix its keys go under.
type suite struct {
	ctx  context.Context
	b    backend.Backend
	root string
}

func (s *suite) put(t *testing.T, key string, data []byte, opts backend.PutOptions) error {
	t.Helper()
	opts.CRC32C = crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	return s.b.Put(s.ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

func (s *suite) get(t *testing.T, key string, off, n int64) []byte {
	t.Helper()
	rc, err := s.b.Get(s.ctx, key, off, n)
	require.NoError(t, err, "get %s [%d, +%d)", key, off, n)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err, "reading %s [%d, +%d)", key, off, n)
	return data
}

func (s *suite) putGetRanges(t *testing.T) {
	for _, size := range []int{0, 1, 4096, 1<<20 + 3} {
		key := fmt.Sprintf("%sobjects/size-%d", s.root, size)
		data := randomBytes(size)
		require.NoError(t, s.put(t, key, data, backend.PutOptions{}))
		assert.Equal(t, data, s.get(t, key, 0, -1), "whole object")
		info, err := s.b.Stat(s.ctx, key)
		require.NoError(t, err)
		assert.Equal(t, backend.ObjectInfo{Key: key, Size: int64(size)}, justWritten(t, info))
		if size < 2 {
			continue
		}
		mid := int64(size / 2)
		assert.Equal(t, data[mid:], s.get(t, key, mid, -1), "from the middle to the end")
		assert.Equal(t, data[1:mid], s.get(t, key, 1, mid-1), "a range inside")
		assert.Equal(t, data[size-1:], s.get(t, key, int64(size-1), 1), "the last byte")
	}
}

func (s *suite) missing(t *testing.T) {
	key := s.root + "missing/object"
	_, err := s.b.Stat(s.ctx, key)
	assert.ErrorIs(t, err, backend.ErrNotExist)
	rc, err := s.b.Get(s.ctx, key, 0, -1)
	if err == nil {
		// A store may answer a GET lazily: the error then comes with the body.
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	assert.ErrorIs(t, err, backend.ErrNotExist)
	assert.False(t, backend.IsTransient(err), "a missing object is not worth a retry: %v", err)
	assert.NoError(t, s.b.Delete(s.ctx, key), "deleting a missing object")
	infos, err := s.b.List(s.ctx, s.root+"missing/", false)
	require.NoError(t, err, "listing a prefix that holds nothing")
	assert.Empty(t, infos)
}

func (s *suite) ifNotExists(t *testing.T) {
	key := s.root + "once/marker"
	require.NoError(t, s.put(t, key, []byte("first"), backend.PutOptions{IfNotExists: true}))
	err := s.put(t, key, []byte("second"), backend.PutOptions{IfNotExists: true})
	assert.ErrorIs(t, err, backend.ErrExists)
	assert.False(t, backend.IsTransient(err), "an object that exists is not worth a retry: %v", err)
	assert.Equal(t, []byte("first"), s.get(t, key, 0, -1), "a refused write changes nothing")
	require.NoError(t, s.put(t, key, []byte("third"), backend.PutOptions{}), "a plain put replaces")
	assert.Equal(t, []byte("third"), s.get(t, key, 0, -1))
}

func (s *suite) list(t *testing.T) {
	dir := s.root + "list/"
	keys := []string{dir + "a", dir + "b/1", dir + "b/2", dir + "c/d/e", dir + "ca"}
	for _, k := range keys {
		require.NoError(t, s.put(t, k, []byte(k), backend.PutOptions{}))
	}
	require.NoError(t, s.put(t, s.root+"listx", []byte("a neighbour"), backend.PutOptions{}))
	infos, err := s.b.List(s.ctx, dir, false)
	require.NoError(t, err)
	var got []string
	for _, o := range infos {
		got = append(got, o.Key)
		assert.Equal(t, int64(len(o.Key)), o.Size, o.Key)
		assert.False(t, o.Dir, o.Key)
		justWritten(t, o)
	}
	assert.Equal(t, keys, got, "recursive, sorted, only under the prefix")

	infos, err = s.b.List(s.ctx, dir, true)
	require.NoError(t, err)
	for i := range infos {
		if infos[i].Dir {
			assert.True(t, infos[i].Modified.IsZero(), "a directory has no write time: %v", infos[i])
		} else {
			infos[i] = justWritten(t, infos[i])
		}
	}
	assert.Equal(t, []backend.ObjectInfo{
		{Key: dir + "a", Size: int64(len(dir + "a"))},
		{Key: dir + "b/", Dir: true},
		{Key: dir + "c/", Dir: true},
		{Key: dir + "ca", Size: int64(len(dir + "ca"))},
	}, infos, "direct children: objects, and sub-prefixes as directories")
}

func (s *suite) delete(t *testing.T) {
	key := s.root + "delete/me"
	require.NoError(t, s.put(t, key, []byte("x"), backend.PutOptions{}))
	require.NoError(t, s.b.Delete(s.ctx, key))
	_, err := s.b.Stat(s.ctx, key)
	assert.ErrorIs(t, err, backend.ErrNotExist)
	infos, err := s.b.List(s.ctx, s.root+"delete/", false)
	require.NoError(t, err)
	assert.Empty(t, infos)
}

func (s *suite) parallel(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 16)
	data := randomBytes(256 << 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.put(t, fmt.Sprintf("%sparallel/%02d", s.root, i), data, backend.PutOptions{IfNotExists: true})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "put %d", i)
	}
	infos, err := s.b.List(s.ctx, s.root+"parallel/", false)
	require.NoError(t, err)
	assert.Len(t, infos, len(errs))
	assert.Equal(t, data, s.get(t, s.root+"parallel/07", 0, -1))
}

func (s *suite) string(t *testing.T) {
	assert.NotEmpty(t, s.b.String())
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }

// justWritten asserts that o, an object this suite wrote moments ago, has
// the write time the store reports (what cleanups judge age by), and
// returns o without it.
func justWritten(t *testing.T, o backend.ObjectInfo) backend.ObjectInfo {
	t.Helper()
	if age := time.Since(o.Modified); age < -time.Minute || age > 10*time.Minute {
		t.Errorf("%s: written moments ago, the store says at %v (%v ago)", o.Key, o.Modified, age)
	}
	o.Modified = time.Time{}
	return o
}
