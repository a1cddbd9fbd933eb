package splitstorage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// A backup moved by hand. A backup's documents name it (its completion
// marker, every index, its seal; an encrypted one's frames are bound to
// it), and it is read only under that name, which is its time, keyspace
// and shard: Vitess picks a backup by its name. Copied or renamed outside
// vtfifo (cp, aws s3 cp, another keyspace's directory), it is whole but
// not the backup its new name says. Restores pass over it, and no command
// calls it damaged, records a test restore of it or quarantines it: that
// is a request the data contradicts (flagvalue.Contradiction), as a table
// a backup does not hold is. It is told from a foreign document put into a
// backup (damage) by proof: its completion marker and its first file's
// index name the same other backup, and, with a signing key, its seal is
// that backup's, checked with the key.

// CheckPlace returns the error of a backup written under another name and
// moved here (see above); nil where it was written, or where that cannot
// be proven (what is wrong with it is then found where it is read).
func (h *Handle) CheckPlace(ctx context.Context) error {
	from := h.movedFrom(ctx)
	if from == "" {
		return nil
	}
	return flagvalue.Contradiction(&MovedError{Backup: h.dir + "/" + h.name, WrittenAs: from})
}

// Copied says whether the listing that gave h found it to be another
// backup's, copied or renamed by hand (only one of a storage that lists
// copies can be: ListingCopies), as CheckPlace would.
func (h *Handle) Copied() bool { return h.copied }

// MovedError is CheckPlace's error (wrapped in a contradiction): Backup,
// dir/name, holds backup WrittenAs.
type MovedError struct{ Backup, WrittenAs string }

func (m *MovedError) Error() string {
	return fmt.Sprintf("split storage: backup %s is backup %s copied or renamed outside vtfifo (its completion marker and indexes name "+
		"%[2]s): a backup is read only under the name it was written with, which is its time, keyspace and shard, so restores pass "+
		"over it; nothing says it is damaged (read it as %[2]s, or remove this copy: vtfifo rm --backup=%s)",
		m.Backup, m.WrittenAs, m.Backup[strings.LastIndexByte(m.Backup, '/')+1:])
}

// placed is cause, the error of reading one of h's documents, or
// CheckPlace's error where h was moved here.
func (h *Handle) placed(ctx context.Context, cause error) error {
	if err := h.CheckPlace(ctx); err != nil {
		return err
	}
	return cause
}

// movedFrom is the backup h's documents were written for, where it is not
// h and they prove it (see above); "" otherwise.
func (h *Handle) movedFrom(ctx context.Context) string {
	complete, err := savedComplete(ctx, h.e.be, backupPrefix(h.dir, h.name), true)
	if err != nil {
		return ""
	}
	return h.movedFromDoc(ctx, complete)
}

// movedFromDoc is movedFrom, h's completion marker being complete.
func (h *Handle) movedFromDoc(ctx context.Context, complete []byte) string {
	prefix := backupPrefix(h.dir, h.name)
	var c Complete
	if strictJSON(complete, &c) != nil || c.Backup == h.dir+"/"+h.name {
		return ""
	}
	cut := strings.LastIndexByte(c.Backup, '/')
	if cut < 1 {
		return ""
	}
	dir, name := c.Backup[:cut], c.Backup[cut+1:]
	if _, err := ParseComplete(complete, dir, name); err != nil || len(c.Files) == 0 {
		return ""
	}
	index, err := readSmall(ctx, h.e.be, prefix+c.Files[0]+indexSuffix)
	if err != nil {
		return ""
	}
	if _, err := ParseIndex(index, dir, name, c.Files[0]); err != nil {
		return ""
	}
	if h.e.seals != nil && !h.sealedAs(ctx, c.Backup, map[string][]byte{completeMarker: complete, c.Files[0] + indexSuffix: index}) {
		return ""
	}
	return c.Backup
}

// sealedAs says whether h's seal is backup's, checked with this host's
// signing keys, and seals docs (by key relative to the backup) as they are.
func (h *Handle) sealedAs(ctx context.Context, backup string, docs map[string][]byte) bool {
	doc, err := readSmall(ctx, h.e.be, backupPrefix(h.dir, h.name)+sealMarker)
	if err != nil {
		return false
	}
	var d sealDoc
	if strictJSON(doc, &d) != nil || d.Backup != backup {
		return false
	}
	if h.checkSealTag(d, backup) != nil {
		return false
	}
	for key, b := range docs {
		if s := sha256.Sum256(b); !bytes.Equal(s[:], d.Objects[key]) {
			return false
		}
	}
	return true
}
