package splitstorage_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

const planted = "PLANTED-ROW-7f3a9c-credit-card-4111111111111111"

// plantedData is size bytes of pseudo-random data with the planted row
// every 64 KiB, as rows of a table would be.
func plantedData(seed uint64, size int64) []byte {
	b := genBytes(seed, size)
	for off := 0; off+len(planted) <= len(b); off += 64 << 10 {
		copy(b[off:], planted)
	}
	return b
}

// TestEncryptedPartsReadOnlyWithTheRightKey writes an encrypted backup to each backend and checks that
// no object holds the plaintext, that every part object has the configured
// size, that it reads back whole with the key, and every way of reading it
// without the right key, or damaged, fails naming backup, file and part
// without handing out a byte that did not authenticate.
func TestEncryptedPartsReadOnlyWithTheRightKey(t *testing.T) {
	for _, kind := range splitstoragetest.LocalAndRemote() {
		t.Run(kind, func(t *testing.T) {
			srv := splitstoragetest.Start(t, kind)
			srv.Setenv(t)
			runEncryption(t, srv)
		})
	}
}

func runEncryption(t *testing.T, srv *splitstoragetest.Server) {
	ctx := context.Background()
	c := srv.Config
	c.PartSize = 1 << 20
	c.EncryptionKeyFile = splitstoragetest.KeyFile(t, "k1", "k0")
	s := newStorage(t, c)
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	dir := "ks/-80"
	plainPerPart := c.PartSize - c.PartSize/(256<<10)*crypt.Overhead
	files := map[string][]byte{
		"MANIFEST":  []byte(`{"note": "` + planted + `"}`),
		"empty":     nil,
		"exact":     plantedData(1, 2*plainPerPart), // ends at a part boundary
		"lane-0":    plantedData(2, 3*c.PartSize+12345),
		"one-frame": plantedData(3, 256<<10-crypt.Overhead),
	}
	write := func(name string) {
		bh, err := s.StartBackup(ctx, dir, name)
		require.NoError(t, err)
		for f, data := range files {
			require.NoError(t, writeFile(ctx, bh, f, bytes.NewReader(data), rand.New(rand.NewPCG(uint64(len(data)), 9))))
		}
		require.NoError(t, bh.EndBackup(ctx))
	}
	write("b1")
	write("b2")

	// What is stored: no plaintext, no key, parts of the configured size.
	keyFile, err := os.ReadFile(c.EncryptionKeyFile)
	require.NoError(t, err)
	var keys [][]byte
	for _, l := range strings.Split(strings.TrimSpace(string(keyFile)), "\n")[1:] {
		keys = append(keys, []byte(strings.Fields(l)[1]))
		raw, err := base64.StdEncoding.DecodeString(strings.Fields(l)[1])
		require.NoError(t, err)
		keys = append(keys, raw)
	}
	objs := objects(t, s, dir+"/b1/")
	for _, o := range objs {
		b := splitstoragetest.Get(t, be, o.Key)
		assert.NotContains(t, string(b), planted[:16], o.Key)
		for _, k := range keys {
			assert.False(t, bytes.Contains(b, k), "%s holds a master key", o.Key)
		}
		if strings.Contains(o.Key, ".part-") {
			assert.LessOrEqual(t, o.Size, c.PartSize, o.Key)
		}
	}
	for _, f := range []string{"exact", "lane-0"} {
		idx, err := findBackup(t, s, dir, "b1").(*splitstorage.Handle).Index(ctx, f)
		require.NoError(t, err)
		assert.Equal(t, 3, idx.Version)
		assert.Equal(t, int64(len(files[f])), idx.Size)
		for i, p := range idx.Parts[:len(idx.Parts)-1] {
			assert.Equal(t, c.PartSize, p.Size, "%s part %d: every part but the last has the part size", f, i+1)
		}
	}
	started := splitstoragetest.Get(t, be, dir+"/b1/.started")
	assert.Contains(t, string(started), `"key_id":"k1"`)

	// With the key: every file whole.
	rbh := findBackup(t, s, dir, "b1")
	for f, data := range files {
		got, err := readAll(ctx, rbh, f)
		require.NoError(t, err, f)
		assert.True(t, bytes.Equal(data, got), "%s reads back as written", f)
	}
	id, err := rbh.(*splitstorage.Handle).EncryptionKeyID(ctx)
	require.NoError(t, err)
	assert.Equal(t, "k1", id)

	// Keys: none, another key under the same ID, the ID missing, rotated.
	for _, kc := range []struct {
		keyFile string
		want    string
	}{
		{"", `backup ks/-80/b1 is encrypted (key ID "k1"): set --split-storage-encryption-key-file`},
		{splitstoragetest.KeyFile(t, "k1"), `does not unwrap with key ID "k1"`},
		{splitstoragetest.KeyFile(t, "k2", "k3"), `key ID "k1", which the key file`},
	} {
		c2 := c
		c2.EncryptionKeyFile = kc.keyFile
		other := findBackup(t, newStorage(t, c2), dir, "b1")
		_, err := readAll(ctx, other, "lane-0")
		require.Error(t, err)
		assert.Contains(t, err.Error(), kc.want)
		assert.Contains(t, err.Error(), "backup ks/-80/b1")
		assert.True(t, unreadable.Is(err), "a key file that does not open the backup proves nothing of it: %v", err)
		assert.NotErrorIs(t, err, splitstorage.ErrDamaged)
	}
	rotated := c
	rotated.EncryptionKeyFile = writeKeys(t, "k9 "+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))+"\n"+string(keyFile))
	got, err := readAll(ctx, findBackup(t, newStorage(t, rotated), dir, "b1"), "lane-0")
	require.NoError(t, err, "an older key still decrypts after rotation")
	assert.True(t, bytes.Equal(files["lane-0"], got))

	// Damage, with the index made to agree (as an attacker who can write
	// the bucket would): each fails at the frame, naming backup, file and
	// part, and hands out only frames before it.
	damage := []struct {
		name, file string
		mutate     func(parts [][]byte) [][]byte
		want       []string
		goodBytes  int64 // bytes that authenticate before the damage
	}{
		{"flipped byte", "lane-0", func(p [][]byte) [][]byte { p[1][300000] ^= 1; return p },
			[]string{"part 2", "frame 1 (bytes 262144..524287) does not decrypt"}, plainPerPart + (256<<10 - crypt.Overhead)},
		{"parts swapped", "lane-0", func(p [][]byte) [][]byte { p[0], p[1] = p[1], p[0]; return p },
			[]string{"part 1", "frame 0", "does not decrypt"}, 0},
		{"part of another backup", "lane-0", func(p [][]byte) [][]byte {
			p[2] = splitstoragetest.Get(t, be, splitstorage.PartKey(dir, "b2", "lane-0", 3))
			return p
		},
			[]string{"part 3", "frame 0", "does not decrypt"}, 2 * plainPerPart},
		{"part of another file", "exact", func(p [][]byte) [][]byte {
			p[0] = splitstoragetest.Get(t, be, splitstorage.PartKey(dir, "b1", "lane-0", 1))
			return p
		},
			[]string{"part 1", "frame 0", "does not decrypt"}, 0},
		{"last frame truncated", "lane-0", func(p [][]byte) [][]byte { l := p[len(p)-1]; p[len(p)-1] = l[:len(l)-100]; return p },
			[]string{"part 4", "frame 0", "does not decrypt"}, 3 * plainPerPart},
		{"last part dropped", "lane-0", func(p [][]byte) [][]byte { return p[:len(p)-1] },
			[]string{"part 3", "frame 3", "does not decrypt", "cut short"}, 2*plainPerPart + 3*(256<<10-crypt.Overhead)},
		{"empty file's frame dropped", "empty", func(p [][]byte) [][]byte { return p[:0] },
			[]string{"index", "at least one part"}, 0},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			name := "damaged-" + strings.ReplaceAll(d.name, " ", "-")
			require.NoError(t, writeOneFile(ctx, s, dir, name, d.file, files[d.file]))
			splitstoragetest.Tamper(t, be, dir, name, d.file, d.mutate)
			r, err := findBackup(t, s, dir, name).ReadFile(ctx, d.file)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(r)
				r.Close()
			}
			require.Error(t, err)
			for _, w := range append(d.want, "backup "+dir+"/"+name, "file "+d.file) {
				assert.Contains(t, err.Error(), w)
			}
			assert.False(t, unreadable.Is(err), "damage read with the right key is damage: %v", err)
			assert.Equal(t, d.goodBytes, int64(len(got)), "only authenticated frames are handed out")
			assert.True(t, bytes.Equal(files[d.file][:len(got)], got))
		})
	}

	// A flipped byte the index does not know about is caught by its CRC32C first.
	require.NoError(t, writeOneFile(ctx, s, dir, "flipped-plain", "lane-0", files["lane-0"]))
	key := splitstorage.PartKey(dir, "flipped-plain", "lane-0", 2)
	b := splitstoragetest.Get(t, be, key)
	b[5] ^= 0x40
	splitstoragetest.Put(t, be, key, b)
	_, err = readAll(ctx, findBackup(t, s, dir, "flipped-plain"), "lane-0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "part 2")
	assert.Contains(t, err.Error(), "checksum mismatch")

	// A copy keeps the backup encrypted, without the key.
	dst := t.TempDir()
	dc := splitstoragetest.Local(t).Config
	dc.File.Root = dst
	ds := newStorage(t, dc)
	_, err = s.CopyBackup(ctx, ds, dir, "b1", splitstorage.CopyOptions{})
	require.NoError(t, err)
	_, err = readAll(ctx, findBackup(t, ds, dir, "b1"), "lane-0")
	assert.ErrorContains(t, err, "is encrypted")
	dc.EncryptionKeyFile = c.EncryptionKeyFile
	got, err = readAll(ctx, findBackup(t, newStorage(t, dc), dir, "b1"), "lane-0")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(files["lane-0"], got))
	rep, err := findBackup(t, ds, dir, "b1").(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err, "parts verify without the key")
	assert.Equal(t, int64(len(files["lane-0"])+len(files["exact"])+len(files["MANIFEST"])+len(files["one-frame"])), rep.Bytes)
}

func writeOneFile(ctx context.Context, s *splitstorage.Storage, dir, name, file string, data []byte) error {
	bh, err := s.StartBackup(ctx, dir, name)
	if err != nil {
		return err
	}
	if err := writeFile(ctx, bh, file, bytes.NewReader(data), rand.New(rand.NewPCG(1, 1))); err != nil {
		return err
	}
	return bh.EndBackup(ctx)
}

func writeKeys(t *testing.T, doc string) string {
	path := t.TempDir() + "/keys"
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	return path
}
