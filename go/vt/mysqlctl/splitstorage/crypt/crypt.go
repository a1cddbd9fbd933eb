// Package crypt is the split storage's client-side encryption: envelope keys
// (a random data key per backup, wrapped by a master key named by an ID) and
// AES-256-GCM frames, each sealed and opened on its own, so that every part of
// a file is decrypted and authenticated by itself.
//
// A file's key is derived from the backup's data key and the file's name
// (HKDF-SHA256), and every frame's nonce is its position: part number, frame
// number in the part, and whether it is the file's last frame. So a frame
// opens only at the place it was sealed for: a part moved to another place of
// the same file, to another file, or to another backup (another data key)
// fails to authenticate, and so does a file cut short (its new last frame was
// not sealed as last). Nothing here knows about objects or backends.
package crypt

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

const (
	// KeySize is the size of master and data keys: AES-256.
	KeySize = 32
	// Overhead is what sealing adds to a frame: the GCM tag.
	Overhead = 16
	// Algorithm names the scheme in the metadata that records it.
	Algorithm = "AES-256-GCM-HKDF-SHA256-v1"
)

// ErrAuth is returned by Open for a frame that does not authenticate.
var ErrAuth = errors.New("authentication failed")

// ErrNotThisKeyFile is wrapped by Keyring.Open's error when the key file
// cannot open the envelope: it lacks its key ID, or its algorithm is newer
// than this version, or the key under that ID does not unwrap it (another
// key is stored under the ID, or the envelope was altered: the two look the
// same). None of these proves the backup damaged.
var ErrNotThisKeyFile = errors.New("not opened by this key file")

// keyFileError marks an error as ErrNotThisKeyFile, its message its own.
type keyFileError struct{ error }

func (e keyFileError) Is(target error) bool { return target == ErrNotThisKeyFile }
func (e keyFileError) Unwrap() error        { return e.error }

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// Keyring holds master keys by ID. The first one wraps new data keys; every
// one unwraps, so keys rotate without re-encrypting old backups.
type Keyring struct {
	source string // where the keys came from, for errors (never a key)
	ids    []string
	keys   map[string][]byte
}

// LoadKeyring reads a key file: one key per line, "<id> <base64 of 32 bytes>";
// blank lines and lines starting with '#' are skipped. Errors name the file
// and line, never a key's bytes.
func LoadKeyring(path string) (*Keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the key file: %w", err)
	}
	defer f.Close()
	// Master keys readable by every user of the host are keys given away.
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o007 != 0 {
		return nil, fmt.Errorf("key file %s is open to every user of the host (mode %04o): chmod o-rwx %s (600, or 640 for a group the tablets are in)",
			path, st.Mode().Perm(), path)
	}
	doc, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the key file: %w", err)
	}
	return ParseKeyring(doc, path)
}

// maxKeyFileBytes bounds a key file: a few hundred keys.
const maxKeyFileBytes = 1 << 20

// ParseKeyring parses the content of a key file named source.
func ParseKeyring(doc []byte, source string) (*Keyring, error) {
	kr := &Keyring{source: source, keys: map[string][]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("key file %s, line %d: want \"<id> <base64 key>\", found %d fields", source, line, len(fields))
		}
		id := fields[0]
		if !validID.MatchString(id) {
			return nil, fmt.Errorf("key file %s, line %d: invalid key ID %q: want 1..64 of A-Z a-z 0-9 . _ : - starting with a letter or digit", source, line, id)
		}
		if _, dup := kr.keys[id]; dup {
			return nil, fmt.Errorf("key file %s, line %d: key ID %q is listed twice", source, line, id)
		}
		key, err := base64.StdEncoding.DecodeString(fields[1])
		if err != nil || len(key) != KeySize {
			return nil, fmt.Errorf("key file %s, line %d: the key of ID %q is not the base64 of %d bytes", source, line, id, KeySize)
		}
		kr.ids = append(kr.ids, id)
		kr.keys[id] = key
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("key file %s: %w", source, err)
	}
	if len(kr.ids) == 0 {
		return nil, fmt.Errorf("key file %s holds no key: want lines \"<id> <base64 of %d random bytes>\"", source, KeySize)
	}
	return kr, nil
}

// NewKeyLine returns a key file line holding a new random key under id.
func NewKeyLine(id string) (string, error) {
	if !validID.MatchString(id) {
		return "", fmt.Errorf("invalid key ID %q: want 1..64 of A-Z a-z 0-9 . _ : - starting with a letter or digit", id)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	return id + " " + base64.StdEncoding.EncodeToString(key), nil
}

// Source is where the keys were read from.
func (kr *Keyring) Source() string { return kr.source }

// IDs lists the keys' IDs, the current one (that wraps new data keys) first.
func (kr *Keyring) IDs() []string { return append([]string(nil), kr.ids...) }

// CurrentID is the ID of the key that wraps new data keys.
func (kr *Keyring) CurrentID() string { return kr.ids[0] }

// Envelope is a data key wrapped by a master key: what a backup stores.
type Envelope struct {
	Algorithm string `json:"algorithm"`
	KeyID     string `json:"key_id"`
	Nonce     []byte `json:"nonce"`
	Wrapped   []byte `json:"wrapped"`
}

// DataKey is a backup's data key.
type DataKey struct{ key []byte }

// NewDataKey makes a random data key for the backup named context and wraps
// it with the current master key. The wrap is bound to context (and the key
// ID), so an envelope moved to another backup does not open.
func (kr *Keyring) NewDataKey(context string) (DataKey, Envelope, error) {
	dk := make([]byte, KeySize)
	if _, err := rand.Read(dk); err != nil {
		return DataKey{}, Envelope{}, err
	}
	id := kr.CurrentID()
	aead, err := newGCM(kr.keys[id])
	if err != nil {
		return DataKey{}, Envelope{}, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return DataKey{}, Envelope{}, err
	}
	wrapped := aead.Seal(nil, nonce, dk, wrapAAD(id, context))
	return DataKey{key: dk}, Envelope{Algorithm: Algorithm, KeyID: id, Nonce: nonce, Wrapped: wrapped}, nil
}

// Open unwraps the data key of the backup named context.
func (kr *Keyring) Open(env Envelope, context string) (DataKey, error) {
	if env.Algorithm != Algorithm {
		return DataKey{}, keyFileError{fmt.Errorf("encrypted with %q, which this version does not know (it knows %s)", env.Algorithm, Algorithm)}
	}
	key, ok := kr.keys[env.KeyID]
	if !ok {
		return DataKey{}, keyFileError{fmt.Errorf("encrypted with key ID %q, which the key file %s does not hold (it holds %s)", env.KeyID, kr.source,
			strings.Join(kr.ids, ", "))}
	}
	aead, err := newGCM(key)
	if err != nil {
		return DataKey{}, err
	}
	if len(env.Nonce) != aead.NonceSize() {
		return DataKey{}, fmt.Errorf("its wrapped data key has a %d-byte nonce, want %d", len(env.Nonce), aead.NonceSize())
	}
	dk, err := aead.Open(nil, env.Nonce, env.Wrapped, wrapAAD(env.KeyID, context))
	if err != nil || len(dk) != KeySize {
		return DataKey{}, keyFileError{fmt.Errorf("its data key does not unwrap with key ID %q of the key file %s: another key is stored under that "+
			"ID there, or the backup's key envelope was altered or belongs to another backup: %w", env.KeyID, kr.source, ErrAuth)}
	}
	return DataKey{key: dk}, nil
}

func wrapAAD(id, context string) []byte {
	return []byte("vtfifo split data key v1\x00" + id + "\x00" + context)
}

// File is the cipher of one file of a backup.
type File struct{ aead cipher.AEAD }

// File derives the cipher of the file named name.
func (dk DataKey) File(name string) (*File, error) {
	if len(dk.key) != KeySize {
		return nil, errors.New("crypt: no data key")
	}
	fk, err := hkdf.Key(sha256.New, dk.key, nil, "vtfifo split file v1\x00"+name, KeySize)
	if err != nil {
		return nil, err
	}
	aead, err := newGCM(fk)
	if err != nil {
		return nil, err
	}
	return &File{aead: aead}, nil
}

// Seal appends to dst the frame sealing plain at its position: part
// (1-based), frame (0-based, within the part), and whether it is the
// file's last frame. dst may be plain[:0] to seal in place (plain's capacity
// must then hold Overhead more bytes).
func (f *File) Seal(dst, plain []byte, part, frame int, last bool) []byte {
	var n [12]byte
	return f.aead.Seal(dst, nonce(&n, part, frame, last), plain, nil)
}

// Open appends to dst the plaintext of the sealed frame at its position, or
// returns ErrAuth (and no plaintext) when the frame does not authenticate
// there. dst may be sealed[:0] to open in place.
func (f *File) Open(dst, sealed []byte, part, frame int, last bool) ([]byte, error) {
	var n [12]byte
	out, err := f.aead.Open(dst, nonce(&n, part, frame, last), sealed, nil)
	if err != nil {
		return nil, ErrAuth
	}
	return out, nil
}

// nonce is a frame's position: unique per frame of a file, and a file's key
// is its own, so no nonce repeats under a key.
func nonce(n *[12]byte, part, frame int, last bool) []byte {
	binary.BigEndian.PutUint32(n[0:4], uint32(part))
	binary.BigEndian.PutUint32(n[4:8], uint32(frame))
	if last {
		n[8] = 1
	}
	return n[:]
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
