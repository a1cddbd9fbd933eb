package splitstorage_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// copyObjects copies every object of backup from to backup to, as cp or
// aws s3 cp would: the bytes as they are.
func copyObjects(t *testing.T, be backend.Backend, from, to string) {
	t.Helper()
	objs, err := be.List(context.Background(), from+"/", false)
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	for _, o := range objs {
		splitstoragetest.Put(t, be, to+strings.TrimPrefix(o.Key, from), splitstoragetest.Get(t, be, o.Key))
	}
}

// requireMoved checks that reading backup dir/name through s fails as one
// written as writtenAs and copied there: a contradiction, neither damage
// nor "could not be read".
func requireMoved(t *testing.T, s *splitstorage.Storage, dir, name, writtenAs string) {
	t.Helper()
	err := readBackup(s, dir, name)
	var moved *splitstorage.MovedError
	require.True(t, errors.As(err, &moved), "%v", err)
	require.Equal(t, splitstorage.MovedError{Backup: dir + "/" + name, WrittenAs: writtenAs}, *moved)
	require.True(t, flagvalue.IsContradiction(err), "%v", err)
	require.False(t, unreadable.Is(err) || errors.Is(err, splitstorage.ErrDamaged) || errors.Is(err, splitstorage.ErrForged), "%v", err)
	require.ErrorContains(t, err, "split storage: backup "+dir+"/"+name+" is backup "+writtenAs+" copied or renamed outside vtfifo "+
		"(its completion marker and indexes name "+writtenAs+"): a backup is read only under the name it was written with, which is its "+
		"time, keyspace and shard, so restores pass over it; nothing says it is damaged (read it as "+writtenAs+", or remove this copy: "+
		"vtfifo rm --backup="+name+")")
}

// TestABackupCopiedByHandIsNotDamaged: a backup's documents name it, so
// one copied or renamed outside vtfifo (another name, another keyspace) is
// refused under its new name; before, that refusal read as damage ("index
// is for ...", a seal "moved here": forged), and a test restore quarantined
// the copy of a good backup. It is told from a foreign document put into a
// backup by proof: the completion marker and an index agree on the other
// backup, and with a signing key the seal is that backup's. Plain, sealed,
// and sealed and encrypted.
func TestABackupCopiedByHandIsNotDamaged(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name           string
		signing, crypt bool
	}{{"plain", false, false}, {"sealed", true, false}, {"sealed-encrypted", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := splitstoragetest.Local(t).Config
			cfg.PartSize = splitstorage.MinPartSize
			if c.signing {
				cfg.SigningKeyFile = splitstoragetest.KeyFile(t, "sign-1")
			}
			if c.crypt {
				cfg.EncryptionKeyFile = splitstoragetest.KeyFile(t, "enc-1")
			}
			s := newStorage(t, cfg)
			be, err := s.RawBackendForTest(ctx)
			require.NoError(t, err)
			for _, n := range []string{"good", "other"} {
				sealedBackup(t, s, "ks/0", n)
			}
			copyObjects(t, be, "ks/0/good", "ks/0/copy")
			copyObjects(t, be, "ks/0/good", "staging/0/good")
			requireMoved(t, s, "ks/0", "copy", "ks/0/good")
			requireMoved(t, s, "staging/0", "good", "ks/0/good")
			require.NoError(t, readBackup(s, "ks/0", "good"), "the original reads as before")

			// Vitess does not list a copy: vtbackup's retention would
			// count it (and remove it), and no restore is to consider it.
			// The CLI's view lists it, to say what it is; neither calls
			// it incomplete (verify --remove-incomplete would remove it).
			require.Equal(t, []string{"good", "other"}, listed(t, s, "ks/0"))
			require.Empty(t, listed(t, s, "staging/0"))
			require.Equal(t, []string{"copy", "good", "other"}, listed(t, s.ListingCopies(), "ks/0"))
			require.Equal(t, []string{"good"}, listed(t, s.ListingCopies().WithParams(backupstorage.NoParams()).(*splitstorage.Storage), "staging/0"))
			for _, dir := range []string{"ks/0", "staging/0"} {
				inc, err := s.ListIncomplete(ctx, dir)
				require.NoError(t, err)
				require.Empty(t, inc, dir)
			}
			bhs, inc, err := s.ListingCopies().ListShard(ctx, "ks/0")
			require.NoError(t, err)
			require.Equal(t, []string{"copy", "good", "other"}, names(bhs))
			require.Empty(t, inc)

			// One document of another backup put into a backup is damage,
			// whatever else agrees: an index, or the completion marker.
			index := splitstorage.IndexKey("ks/0", "other", "f")
			splitstoragetest.Put(t, be, index, splitstoragetest.Get(t, be, splitstorage.IndexKey("ks/0", "good", "f")))
			err = readBackup(s, "ks/0", "other")
			require.False(t, flagvalue.IsContradiction(err) || unreadable.Is(err), "%v", err)
			require.Regexp(t, "index is for ks/0/good|its index: not the sealed one", err.Error())

			copyObjects(t, be, "ks/0/good", "ks/0/marker")
			sealedBackup(t, s, "ks/0", "mixed")
			splitstoragetest.Put(t, be, "ks/0/mixed/.complete", splitstoragetest.Get(t, be, "ks/0/good/.complete"))
			err = readBackup(s, "ks/0", "mixed")
			require.False(t, flagvalue.IsContradiction(err) || unreadable.Is(err), "%v", err)

			if c.signing {
				// A copy whose completion marker was edited is not the sealed
				// backup it names: forged, not moved.
				ck := "ks/0/marker/.complete"
				splitstoragetest.Put(t, be, ck, bytes.Replace(splitstoragetest.Get(t, be, ck), []byte(`"parts":`), []byte(`"parts": `), 1))
				err = readBackup(s, "ks/0", "marker")
				require.True(t, errors.Is(err, splitstorage.ErrForged), "%v", err)
				require.False(t, flagvalue.IsContradiction(err), "%v", err)
			}
		})
	}
}

// TestAListingDoesNotJudgeAnUnreadableMarker: a listing reads each
// completion marker (to leave out a copy); one that is there but refused
// (403) is listed from a HEAD, as before: its reads say what is wrong,
// the listing judges nothing. Refused both ways, the listing fails with
// the store's error (exit 3 in vtfifo), never a verdict. S3 behind the
// fault proxy.
func TestAListingDoesNotJudgeAnUnreadableMarker(t *testing.T) {
	base := splitstoragetest.Start(t, "s3")
	p := splitstoragetest.NewFaultProxy(t, base.Addr)
	srv := base.WithProxy(p)
	srv.Setenv(t)
	s := newStorage(t, srv.Config)
	sealedBackup(t, s, "ks/0", "good")

	p.FailMatching("GET", "/good/.complete", splitstoragetest.Forbidden, 1)
	require.Equal(t, []string{"good"}, listed(t, s, "ks/0"))

	p.FailMatching("", "/good/.complete", splitstoragetest.Forbidden, 2)
	_, err := s.ListBackups(context.Background(), "ks/0")
	require.ErrorContains(t, err, "split storage: listing backups in ks/0: ")
	require.ErrorContains(t, err, "StatusCode: 403")
	require.False(t, errors.Is(err, splitstorage.ErrDamaged) || errors.Is(err, splitstorage.ErrForged), "%v", err)
}
