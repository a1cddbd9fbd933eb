package crypt

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
)

// Seals: tamper evidence without encryption. A key of a signing keyring
// (the same file format as the encryption keys, and the same rotation: the
// first key seals, every key checks) makes HMAC-SHA256 tags over a backup's
// documents and over each part's bytes, under a key derived for sealing
// alone (HKDF-SHA256, so a key file used for both purposes never uses one
// key for two), and bound to where the bytes belong: a tag made for one
// backup, file or part does not check at another. A CRC32C, which anyone
// can make match, says a part was not damaged; a tag says it was not
// replaced.

// SealAlgorithm names the scheme in the documents that record it.
const SealAlgorithm = "HMAC-SHA256-HKDF-v1"

// TagSize is the size of a document's tag; BlockTagSize of a block's
// (HMAC-SHA256 cut to 64 bits: an index holds one per 256 KiB block, and a
// forger without the key has one try per read at 2^-64).
const (
	TagSize      = sha256.Size
	BlockTagSize = 8
)

// ErrForged is returned (wrapped) for a tag that does not check.
var ErrForged = errors.New("replaced or forged")

// ErrUnknownSealKey is returned (wrapped) for a tag made with a key the
// keyring lacks.
var ErrUnknownSealKey = errors.New("sealed with a key the signing key file does not hold")

// sealKey derives the MAC key of master key id.
func (kr *Keyring) sealKey(id string) ([]byte, error) {
	master, ok := kr.keys[id]
	if !ok {
		return nil, fmt.Errorf("key %q (the key file %s holds %v): %w", id, kr.source, kr.ids, ErrUnknownSealKey)
	}
	return hkdf.Key(sha256.New, master, nil, "vtfifo seal v1", sha256.Size)
}

// NewMAC returns the MAC of key id (CurrentID to seal): Begin a tag's
// context, write the bytes, and Sum(nil) is the tag (BlockTag: a block's).
func (kr *Keyring) NewMAC(id string) (hash.Hash, error) {
	k, err := kr.sealKey(id)
	if err != nil {
		return nil, err
	}
	return hmac.New(sha256.New, k), nil
}

// Begin resets mac for bytes sealed for context: a tag made for one
// context does not check for another.
func Begin(mac hash.Hash, context string) {
	mac.Reset()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(context)))
	mac.Write(n[:])
	mac.Write([]byte(context))
}

// BlockTag is the tag of the bytes written to mac since Begin, cut to
// BlockTagSize, appended to dst.
func BlockTag(dst []byte, mac hash.Hash) []byte {
	var sum [sha256.Size]byte
	return append(dst, mac.Sum(sum[:0])[:BlockTagSize]...)
}

// Tag returns the tag of doc sealed for context under key id.
func (kr *Keyring) Tag(id, context string, doc []byte) ([]byte, error) {
	h, err := kr.NewMAC(id)
	if err != nil {
		return nil, err
	}
	Begin(h, context)
	h.Write(doc)
	return h.Sum(nil), nil
}

// CheckTag checks that tag is doc's, sealed for context under key id.
func (kr *Keyring) CheckTag(id, context string, doc, tag []byte) error {
	want, err := kr.Tag(id, context, doc)
	if err != nil {
		return err
	}
	if !hmac.Equal(want, tag) {
		return ErrForged
	}
	return nil
}
