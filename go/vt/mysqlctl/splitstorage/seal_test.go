package splitstorage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// sealedBackup writes backup dir/name of one 3-part file "f" and a
// MANIFEST in the storage s.
func sealedBackup(t *testing.T, s *splitstorage.Storage, dir, name string) {
	t.Helper()
	ctx := context.Background()
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f", newGen(7, 3*splitstorage.MinPartSize-1000), rand.New(rand.NewPCG(1, 2))))
	require.NoError(t, writeFile(ctx, bh, "MANIFEST", bytes.NewReader([]byte(`{"BackupMethod":"fifo","Position":"0-1-100"}`)), rand.New(rand.NewPCG(3, 4))))
	require.NoError(t, bh.EndBackup(ctx))
}

// readBackup reads every file of a backup through s, and verifies its parts.
func readBackup(s *splitstorage.Storage, dir, name string) error {
	ctx := context.Background()
	bh, err := s.OpenBackup(ctx, dir, name)
	if err != nil {
		return err
	}
	for _, f := range []string{"f", "MANIFEST"} {
		r, err := bh.ReadFile(ctx, f)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, r)
		r.Close()
		if err != nil {
			return err
		}
	}
	_, err = bh.(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	return err
}

// TestSealsRefuseForgeries: with a signing key a backup is sealed, and a
// reader with the key (a restore's read, verify) refuses it when any of its
// parts, indexes or markers is not the one sealed, even where every CRC32C
// agrees, naming what was forged; the same backup read without a key reads
// as before; keys rotate; a key the file lacks is "cannot be checked", never
// forged.
func TestSealsRefuseForgeries(t *testing.T) {
	for _, kind := range []string{splitstorage.BackendFile, splitstorage.BackendS3} {
		t.Run(kind, func(t *testing.T) {
			srv := splitstoragetest.Start(t, kind)
			srv.Setenv(t)
			ctx := context.Background()
			keys := splitstoragetest.KeyFile(t, "sign-1")
			cfg := srv.Config
			cfg.SigningKeyFile, cfg.PartSize = keys, splitstorage.MinPartSize
			sealed := newStorage(t, cfg)
			plain := newStorage(t, srv.Config)
			be, err := sealed.RawBackendForTest(ctx)
			require.NoError(t, err)
			dir := "ks/0"
			for _, n := range []string{"good", "part", "index", "complete", "moved", "unsealed"} {
				sealedBackup(t, sealed, dir, n)
			}
			require.NoError(t, readBackup(sealed, dir, "good"))
			require.NoError(t, readBackup(plain, dir, "good"), "a sealed backup reads without a key as before")

			// A part replaced by one whose CRC32C (whole and per block) matches.
			pk := splitstorage.PartKey(dir, "part", "f", 2)
			orig := splitstoragetest.Get(t, be, pk)
			splitstoragetest.Put(t, be, pk, splitstoragetest.ForgeCRC32C(orig, 100, 104))
			require.NoError(t, readBackup(plain, dir, "part"), "without a key the CRC32C forgery passes: the seal is what catches it")
			// An index rewritten to match edited content (Tamper recomputes the checksums).
			splitstoragetest.Tamper(t, be, dir, "index", "MANIFEST", func(parts [][]byte) [][]byte {
				return [][]byte{[]byte(`{"BackupMethod":"fifo","Position":"0-1-999"}`)}
			})
			// The completion marker edited; the seal of another backup moved in.
			ck := "ks/0/complete/.complete"
			splitstoragetest.Put(t, be, ck, bytes.Replace(splitstoragetest.Get(t, be, ck), []byte(`"parts":`), []byte(`"parts": `), 1))
			splitstoragetest.Put(t, be, "ks/0/moved/.seal", splitstoragetest.Get(t, be, "ks/0/good/.seal"))
			require.NoError(t, be.Delete(ctx, "ks/0/unsealed/.seal"))

			for name, want := range map[string]string{
				"part":     "backup ks/0/part, file f, part 2, block 0: its bytes: not the ones sealed (the tag differs; a CRC32C can be made to match)",
				"index":    "backup ks/0/index, file MANIFEST: its index: not the sealed one",
				"complete": "backup ks/0/complete: .complete: not the sealed one",
				"moved":    "backup ks/0/moved: its seal (the seal of backup ks/0/good, moved here)",
				"unsealed": "backup ks/0/unsealed carries no seal, but its index MANIFEST.index says its parts were sealed with key sign-1: its seal was removed",
			} {
				err := readBackup(sealed, dir, name)
				require.Error(t, err, name)
				require.ErrorContains(t, err, want, name)
				require.True(t, errors.Is(err, splitstorage.ErrForged) && errors.Is(err, splitstorage.ErrDamaged), "%s: %v", name, err)
				require.False(t, unreadable.Is(err), "%s: a forgery is damage, not access: %v", name, err)
			}
			// verify alone (whole parts, streamed) names the part and block too,
			// and reading another block of the same part is not refused.
			bh, err := sealed.OpenBackup(ctx, dir, "part")
			require.NoError(t, err)
			_, err = bh.(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
			require.ErrorContains(t, err, "file f, part 2 (ks/0/part/f.part-00000002): split storage: backup ks/0/part, file f, part 2, block 0: its bytes: not the ones sealed")
			r, err := bh.(*splitstorage.Handle).ReadFileRange(ctx, "f", splitstorage.MinPartSize+300<<10, 1000)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, r)
			r.Close()
			require.NoError(t, err, "block 1 of the forged part is the sealed one")

			accepting := cfg
			accepting.AcceptUnsealed = true
			require.NoError(t, readBackup(newStorage(t, accepting), dir, "unsealed"), "--split-storage-accept-unsealed reads it unchecked")

			// A backup written before signing was turned on proves nothing
			// either way: refused, and not called damaged.
			sealedBackup(t, plain, dir, "before-signing")
			err = readBackup(sealed, dir, "before-signing")
			require.ErrorContains(t, err, "backup ks/0/before-signing cannot be checked: it carries no seal, and none of its indexes names a signing "+
				"key (written without --split-storage-signing-key-file): refused while a signing key is set (--split-storage-accept-unsealed reads "+
				"it unchecked); nothing says it is damaged")
			require.True(t, unreadable.Is(err), "%v", err)
			require.False(t, errors.Is(err, splitstorage.ErrDamaged) || errors.Is(err, splitstorage.ErrForged), "%v", err)
			require.NoError(t, readBackup(newStorage(t, accepting), dir, "before-signing"))

			// Rotation: a new key first seals; the old one still checks.
			rotated := cfg
			rotated.SigningKeyFile = splitstoragetest.KeyFile(t, "sign-2")
			both, err := os.ReadFile(rotated.SigningKeyFile)
			require.NoError(t, err)
			old, err := os.ReadFile(keys)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(rotated.SigningKeyFile, append(both, old...), 0o400))
			require.NoError(t, readBackup(newStorage(t, rotated), dir, "good"))
			// A key file without the sealing key cannot check: not forged.
			other := cfg
			other.SigningKeyFile = splitstoragetest.KeyFile(t, "sign-3")
			err = readBackup(newStorage(t, other), dir, "good")
			require.ErrorContains(t, err, `sealed with a key the signing key file does not hold`)
			require.True(t, unreadable.Is(err), "%v", err)
			require.False(t, errors.Is(err, splitstorage.ErrDamaged), "%v", err)
		})
	}
}

// TestSealedAndEncrypted: a backup both encrypted and sealed reads back;
// its tags are of the stored (encrypted) bytes, checked before decryption.
func TestSealedAndEncrypted(t *testing.T) {
	srv := splitstoragetest.Local(t)
	cfg := srv.Config
	cfg.PartSize = splitstorage.MinPartSize
	cfg.EncryptionKeyFile = splitstoragetest.KeyFile(t, "enc-1")
	cfg.SigningKeyFile = splitstoragetest.KeyFile(t, "sign-1")
	s := newStorage(t, cfg)
	sealedBackup(t, s, "ks/0", "both")
	require.NoError(t, readBackup(s, "ks/0", "both"))
	be, err := s.RawBackendForTest(context.Background())
	require.NoError(t, err)
	pk := splitstorage.PartKey("ks/0", "both", "f", 1)
	splitstoragetest.Put(t, be, pk, splitstoragetest.ForgeCRC32C(splitstoragetest.Get(t, be, pk), 100, 104))
	require.ErrorContains(t, readBackup(s, "ks/0", "both"), "file f, part 1, block 0: its bytes: not the ones sealed")
}

// TestSealedRecords: a record stored beside a sealed backup carries its
// tag: read back with the key it is the record; moved from another backup,
// edited, or stored bare, it is refused naming it; without a key it reads.
func TestSealedRecords(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	cfg := srv.Config
	cfg.SigningKeyFile = splitstoragetest.KeyFile(t, "sign-1")
	s := newStorage(t, cfg)
	plain := newStorage(t, srv.Config)
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	open := func(st *splitstorage.Storage, name string) *splitstorage.Handle {
		bh, err := st.OpenBackup(ctx, "ks/0", name)
		require.NoError(t, err)
		return bh.(*splitstorage.Handle)
	}
	for _, n := range []string{"a", "b", "c"} {
		sealedBackup(t, s, "ks/0", n)
		require.NoError(t, open(s, n).PutSidecar(ctx, "record", []byte(`{"backup":"ks/0/`+n+`"}`)))
	}
	got, err := open(s, "a").ReadSidecar(ctx, "record")
	require.NoError(t, err)
	require.Equal(t, `{"backup":"ks/0/a"}`, string(got))
	got, err = open(plain, "a").ReadSidecar(ctx, "record")
	require.NoError(t, err, "without a key the record reads")
	require.Equal(t, `{"backup":"ks/0/a"}`, string(got))

	splitstoragetest.Put(t, be, "ks/0/b/.sidecar-record", splitstoragetest.Get(t, be, "ks/0/a/.sidecar-record"))
	splitstoragetest.Put(t, be, "ks/0/c/.sidecar-record", []byte(`{"backup":"ks/0/c","outcome":"passed"}`))
	for name, want := range map[string]string{
		"b": "backup ks/0/b: its record: replaced or forged",
		"c": "backup ks/0/c: its record: carries no tag beside a sealed backup: replaced or forged",
	} {
		_, err := open(s, name).ReadSidecar(ctx, "record")
		require.ErrorContains(t, err, want)
		require.ErrorIs(t, err, splitstorage.ErrForged)
	}
}
