package crypt

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func keyring(t *testing.T, ids ...string) (*Keyring, string) {
	t.Helper()
	var lines []string
	for _, id := range ids {
		l, err := NewKeyLine(id)
		require.NoError(t, err)
		lines = append(lines, l)
	}
	doc := "# test keys\n\n" + strings.Join(lines, "\n") + "\n"
	kr, err := ParseKeyring([]byte(doc), "keys.txt")
	require.NoError(t, err)
	return kr, doc
}

func TestFramesOpenOnlyWhereSealed(t *testing.T) {
	kr, _ := keyring(t, "k1")
	dk, env, err := kr.NewDataKey("ks/0/b1")
	require.NoError(t, err)
	assert.Equal(t, "k1", env.KeyID)
	f, err := dk.File("lane-0")
	require.NoError(t, err)
	plain := []byte("rows of the business")
	sealed := f.Seal(nil, plain, 3, 7, false)
	require.Len(t, sealed, len(plain)+Overhead)
	assert.False(t, bytes.Contains(sealed, plain))

	got, err := f.Open(nil, sealed, 3, 7, false)
	require.NoError(t, err)
	assert.Equal(t, plain, got)

	// The same bytes anywhere else do not open.
	for _, pos := range []struct {
		part, frame int
		last        bool
	}{{2, 7, false}, {3, 6, false}, {3, 7, true}} {
		_, err := f.Open(nil, sealed, pos.part, pos.frame, pos.last)
		assert.ErrorIs(t, err, ErrAuth, "%+v", pos)
	}
	other, err := dk.File("lane-1")
	require.NoError(t, err)
	_, err = other.Open(nil, sealed, 3, 7, false)
	assert.ErrorIs(t, err, ErrAuth, "another file of the backup")
	dk2, _, err := kr.NewDataKey("ks/0/b2")
	require.NoError(t, err)
	f2, err := dk2.File("lane-0")
	require.NoError(t, err)
	_, err = f2.Open(nil, sealed, 3, 7, false)
	assert.ErrorIs(t, err, ErrAuth, "the same file of another backup")

	flipped := bytes.Clone(sealed)
	flipped[4] ^= 1
	out, err := f.Open(nil, flipped, 3, 7, false)
	assert.ErrorIs(t, err, ErrAuth)
	assert.Nil(t, out, "no unauthenticated plaintext")
	_, err = f.Open(nil, sealed[:len(sealed)-1], 3, 7, false)
	assert.ErrorIs(t, err, ErrAuth, "a truncated frame")

	// In place, as the storage does it.
	buf := make([]byte, len(plain), len(plain)+Overhead)
	copy(buf, plain)
	inPlace := f.Seal(buf[:0], buf, 1, 0, true)
	opened, err := f.Open(inPlace[:0], inPlace, 1, 0, true)
	require.NoError(t, err)
	assert.Equal(t, plain, opened)
}

// TestEnvelopeOpensAfterKeyRotation: a data key wrapped by an old key opens
// once a new key is current and the old one is still in the key file.
func TestEnvelopeOpensAfterKeyRotation(t *testing.T) {
	old, _ := keyring(t, "old")
	dk, env, err := old.NewDataKey("ks/0/b1")
	require.NoError(t, err)

	// Rotation: a new key first, the old one still there.
	both, err := ParseKeyring([]byte(mustLine(t, "new")+"\n"+lineOf(t, old, "old")), "rotated.txt")
	require.NoError(t, err)
	assert.Equal(t, "new", both.CurrentID())
	got, err := both.Open(env, "ks/0/b1")
	require.NoError(t, err)
	assert.Equal(t, dk.key, got.key)
	_, env2, err := both.NewDataKey("ks/0/b2")
	require.NoError(t, err)
	assert.Equal(t, "new", env2.KeyID)

	_, err = both.Open(env, "ks/0/b9")
	assert.ErrorIs(t, err, ErrAuth, "an envelope moved to another backup")

	missing, _ := keyring(t, "k2", "k3")
	_, err = missing.Open(env, "ks/0/b1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `key ID "old", which the key file keys.txt does not hold (it holds k2, k3)`)

	impostor, _ := keyring(t, "old") // same ID, other bytes
	_, err = impostor.Open(env, "ks/0/b1")
	assert.ErrorIs(t, err, ErrAuth)

	bad := env
	bad.Algorithm = "ROT13"
	_, err = old.Open(bad, "ks/0/b1")
	assert.ErrorContains(t, err, `"ROT13"`)
}

func mustLine(t *testing.T, id string) string {
	l, err := NewKeyLine(id)
	require.NoError(t, err)
	return l
}

func lineOf(t *testing.T, kr *Keyring, id string) string {
	return id + " " + base64.StdEncoding.EncodeToString(kr.keys[id])
}

func TestKeyFileErrorsNeverShowAKey(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 31)) // one byte short
	for _, c := range []struct{ doc, want string }{
		{"", "holds no key"},
		{"# only a comment\n", "holds no key"},
		{"k1 " + secret + "\n", `line 1: the key of ID "k1" is not the base64 of 32 bytes`},
		{"k1 not-base64!" + secret + "\n", `line 1: the key of ID "k1" is not the base64 of 32 bytes`},
		{"\n" + secret + "\n", "line 2: want \"<id> <base64 key>\", found 1 fields"},
		{"-bad " + secret + "\n", `line 1: invalid key ID "-bad"`},
		{mustLine(t, "k1") + "\n" + mustLine(t, "k1") + "\n", `line 2: key ID "k1" is listed twice`},
	} {
		_, err := ParseKeyring([]byte(c.doc), "/etc/keys")
		require.Error(t, err, c.doc)
		assert.Contains(t, err.Error(), c.want)
		assert.Contains(t, err.Error(), "/etc/keys")
		assert.NotContains(t, err.Error(), secret)
		assert.NotContains(t, err.Error(), secret[:12])
	}
	_, err := NewKeyLine("has space")
	assert.Error(t, err)
}

func TestLoadKeyring(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(path, []byte(mustLine(t, "2026-11")+"\n"), 0o600))
	kr, err := LoadKeyring(path)
	require.NoError(t, err)
	assert.Equal(t, "2026-11", kr.CurrentID())
	assert.Equal(t, path, kr.Source())
	_, err = LoadKeyring(path + ".missing")
	assert.True(t, errors.Is(err, os.ErrNotExist))

	// Group-readable is for the tablets' group; world-readable is refused,
	// naming the file and the fix, never the key.
	require.NoError(t, os.Chmod(path, 0o640))
	_, err = LoadKeyring(path)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = LoadKeyring(path)
	require.Error(t, err)
	assert.Equal(t, "key file "+path+" is open to every user of the host (mode 0644): chmod o-rwx "+path+" (600, or 640 for a group the tablets are in)",
		err.Error())
}

// BenchmarkFrame seals and opens 256 KiB frames in place, as the storage does.
func BenchmarkFrame(b *testing.B) {
	kr, _ := keyring(&testing.T{}, "k1")
	dk, _, err := kr.NewDataKey("ks/0/b")
	require.NoError(b, err)
	f, err := dk.File("lane-000")
	require.NoError(b, err)
	buf := make([]byte, 256<<10)
	plain := buf[:len(buf)-Overhead]
	b.Run("seal", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for i := range b.N {
			f.Seal(plain[:0], plain, 1, i, false)
		}
	})
	sealed := f.Seal(plain[:0], plain, 1, 0, false)
	work := make([]byte, len(sealed))
	b.Run("open", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for range b.N {
			copy(work, sealed)
			if _, err := f.Open(work[:0], work, 1, 0, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
