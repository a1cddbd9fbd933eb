package splitstorage

import (
	"context"
	"errors"
	"fmt"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// Encryption (--split-storage-encryption-key-file): every file of a backup is
// stored as frames of frameSize bytes, each the AES-256-GCM sealing of
// frameSize-16 bytes of the file, at the place of the CRC32C blocks: a part
// of the configured size holds a whole number of frames (the part size must
// be a multiple of frameSize), the last frame of a file may be shorter and is
// sealed as the last, even when empty. The reader checks a block's CRC32C,
// then opens it as the frame of its part and place, and hands out nothing of
// a frame that does not authenticate.
//
// The backup's data key, random, is wrapped by the key file's first key and
// stored in its start marker (with the key's ID); indexes of encrypted files
// are version 3, which readers that do not decrypt refuse. Object names,
// sizes, the indexes' part checksums and the markers stay in the clear.
const frameSize = crcBlockSize

// fileCipher returns the cipher of an encrypted file of this backup.
func (h *Handle) fileCipher(ctx context.Context, file string) (*crypt.File, error) {
	dk, err := h.readDataKey(ctx)
	if err != nil {
		return nil, err
	}
	fc, err := dk.File(file)
	if err != nil {
		return nil, fmt.Errorf("split storage: %s: %w", h.where(file), err)
	}
	return fc, nil
}

// readDataKey unwraps the backup's data key from its start marker, once.
func (h *Handle) readDataKey(ctx context.Context) (*crypt.DataKey, error) {
	h.keyMu.Lock()
	defer h.keyMu.Unlock()
	if h.dataKey != nil {
		return h.dataKey, nil
	}
	env, err := h.envelope(ctx)
	if err != nil {
		return nil, err
	}
	if env == nil {
		return nil, fmt.Errorf("split storage: backup %s/%s: its indexes say it is encrypted, but its start marker holds no key envelope", h.dir, h.name)
	}
	// Without the key that opens it, this host cannot read the backup:
	// no proof of anything about it (unreadable, never damage).
	if h.e.keys == nil {
		return nil, unreadable.Error(fmt.Errorf("split storage: backup %s/%s is encrypted (key ID %q): set --split-storage-encryption-key-file to a "+
			"key file that holds that key", h.dir, h.name, env.KeyID))
	}
	dk, err := h.e.keys.Open(*env, h.dir+"/"+h.name)
	if err != nil {
		err = fmt.Errorf("split storage: backup %s/%s: %w", h.dir, h.name, err)
		if errors.Is(err, crypt.ErrNotThisKeyFile) {
			err = unreadable.Error(err)
		}
		return nil, err
	}
	h.dataKey = &dk
	return h.dataKey, nil
}

// envelope reads the backup's wrapped data key from its start marker (nil:
// the backup is stored in the clear).
func (h *Handle) envelope(ctx context.Context) (*crypt.Envelope, error) {
	key := backupPrefix(h.dir, h.name) + startedMarker
	doc, err := readSmall(ctx, h.e.be, key)
	if err != nil {
		if errors.Is(err, ErrNotExist) {
			return nil, fmt.Errorf("split storage: backup %s/%s: its start marker %s is missing: %w", h.dir, h.name, key, err)
		}
		return nil, fmt.Errorf("split storage: backup %s/%s: reading its start marker: %w", h.dir, h.name, err)
	}
	var st startedDoc
	if err := strictJSON(doc, &st); err != nil {
		return nil, fmt.Errorf("split storage: backup %s/%s: corrupt start marker %s: %w", h.dir, h.name, key, err)
	}
	return st.Encryption, nil
}

// EncryptionKeyID returns the ID of the master key that wraps the backup's
// data key, or "" for a backup stored in the clear.
func (h *Handle) EncryptionKeyID(ctx context.Context) (string, error) {
	env, err := h.envelope(ctx)
	if err != nil || env == nil {
		return "", err
	}
	return env.KeyID, nil
}

// CheckKey says whether this storage's key file opens the backup: the ID of
// the master key that wraps its data key ("" for a backup in the clear), and
// the error unwrapping it (no key file, no key of that ID, or another key
// under that ID). Nothing but the start marker is read.
func (h *Handle) CheckKey(ctx context.Context) (keyID string, err error) {
	env, err := h.envelope(ctx)
	if err != nil || env == nil {
		return "", err
	}
	_, err = h.readDataKey(ctx)
	return env.KeyID, err
}

// Keys lists the IDs of the storage's key file, the current one first (nil
// without --split-storage-encryption-key-file), and the file.
func (s *Storage) Keys(ctx context.Context) ([]string, string, error) {
	e, err := s.env(ctx)
	if err != nil || e.keys == nil {
		return nil, "", err
	}
	return e.keys.IDs(), e.keys.Source(), nil
}

// checkEncryptedIndex checks what a version 3 index adds: the scheme, parts
// of whole frames, frames that can hold a tag, and a size that is what the
// frames hold.
func checkEncryptedIndex(idx Index) error {
	if idx.Encryption != crypt.Algorithm {
		return fmt.Errorf("encrypted with %q, which this version does not know (it knows %s)", idx.Encryption, crypt.Algorithm)
	}
	if idx.PartSize%idx.BlockSize != 0 {
		return fmt.Errorf("corrupt index: part_size %d is not a multiple of the frame size %d", idx.PartSize, idx.BlockSize)
	}
	var plain int64
	for i, p := range idx.Parts {
		frames := (p.Size + idx.BlockSize - 1) / idx.BlockSize
		if tail := p.Size % idx.BlockSize; tail != 0 && tail < crypt.Overhead {
			return fmt.Errorf("corrupt index: part %d ends in a frame of %d bytes, shorter than its %d-byte tag", i+1, tail, crypt.Overhead)
		}
		plain += p.Size - frames*crypt.Overhead
	}
	if len(idx.Parts) == 0 {
		return errors.New("corrupt index: an encrypted file has at least one part (its last frame)")
	}
	if plain != idx.Size {
		return fmt.Errorf("corrupt index: size %d but its frames hold %d bytes", idx.Size, plain)
	}
	return nil
}
