package splitstorage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// The layout of a backup in the storage: every object is under
// <dir>/<name>/ (backupPrefix). A file is parts <file>.part-NNNNNNNN
// (PartKey) and, once they are all stored, its index <file>.index
// (IndexKey, the Index document). '.'-leading keys, which no backup file can
// have, are the backup's own: .started (first, startedDoc), .base (an
// incremental backup's base, baseDoc), .complete (last, the Complete
// document), .retired (a removed base kept for its dependents, retiredDoc)
// and .sidecar-<name> (small documents stored after completion, such as a
// verification record: no index lists them, ReadFile never returns them,
// RemoveBackup removes them with the backup) and .reading-<holder> (read
// leases, lease.go).
const (
	startedMarker   = ".started"
	completeMarker  = ".complete"
	baseMarker      = ".base"
	retiredMarker   = ".retired"
	sidecarPrefix   = ".sidecar-"
	leasePrefix     = ".reading-"
	indexSuffix     = ".index"
	partInfix       = ".part-"
	maxIndexBytes   = 64 << 20
	maxSidecarBytes = 1 << 20
)

// ParseIndex decodes a file's part index (<file>.index) and checks that it is
// one this storage could have written for file of backup dir/name: version 1, 2
// or 3 (encrypted),
// the backup and file names, a part size within limits, every part but the
// last exactly part_size bytes, the last 1..part_size bytes, and a total that
// is the sum of the parts. A hand-edited or damaged index fails here, naming
// what is inconsistent, before any part is fetched.
func ParseIndex(doc []byte, dir, name, file string) (Index, error) {
	var idx Index
	err := strictJSON(doc, &idx)
	if later := laterThan(doc, idx.Version, err, 3, "index"); later != nil {
		return Index{}, later
	}
	if err != nil {
		return Index{}, fmt.Errorf("corrupt index: %w", err)
	}
	if idx.Version < 1 || idx.Version > 3 {
		return Index{}, fmt.Errorf("corrupt index: version %d, want 1..3", idx.Version)
	}
	if (idx.Version == 3) != (idx.Encryption != "") {
		return Index{}, fmt.Errorf("corrupt index: version %d with encryption %q", idx.Version, idx.Encryption)
	}
	if idx.File != file || idx.Backup != dir+"/"+name {
		return Index{}, fmt.Errorf("index is for %s, file %s", idx.Backup, idx.File)
	}
	if idx.PartSize < 1 || idx.PartSize > MaxPartSize {
		return Index{}, fmt.Errorf("corrupt index: part_size %d out of range 1..%d", idx.PartSize, int64(MaxPartSize))
	}
	if idx.Version >= 2 && (idx.BlockSize < 1<<10 || idx.BlockSize > idx.PartSize) {
		return Index{}, fmt.Errorf("corrupt index: block_size %d out of range 1024..%d", idx.BlockSize, idx.PartSize)
	}
	if len(idx.Parts) > MaxParts {
		return Index{}, fmt.Errorf("corrupt index: %d parts, at most %d", len(idx.Parts), MaxParts)
	}
	var sum int64
	for i, p := range idx.Parts {
		last := i == len(idx.Parts)-1
		switch {
		case p.Size < 1 || p.Size > idx.PartSize:
			return Index{}, fmt.Errorf("corrupt index: part %d has size %d, want 1..%d", i+1, p.Size, idx.PartSize)
		case !last && p.Size != idx.PartSize:
			return Index{}, fmt.Errorf("corrupt index: part %d of %d has size %d, want the part size %d", i+1, len(idx.Parts), p.Size, idx.PartSize)
		}
		if idx.Version >= 2 {
			if want := 4 * ((p.Size + idx.BlockSize - 1) / idx.BlockSize); int64(len(p.Blocks)) != want {
				return Index{}, fmt.Errorf("corrupt index: part %d has %d bytes of block checksums, want %d", i+1, len(p.Blocks), want)
			}
		} else if p.Blocks != nil {
			return Index{}, fmt.Errorf("corrupt index: part %d has block checksums in a version 1 index", i+1)
		}
		if want := crypt.BlockTagSize * int(len(p.Blocks)/4); (idx.SealKey != "" && len(p.Tags) != want) || (idx.SealKey == "" && p.Tags != nil) {
			return Index{}, fmt.Errorf("corrupt index: part %d has %d bytes of block tags with seal key %q, want %d", i+1, len(p.Tags), idx.SealKey, want)
		}
		sum += p.Size
	}
	if idx.Version == 3 {
		if err := checkEncryptedIndex(idx); err != nil {
			return Index{}, err
		}
	} else if sum != idx.Size {
		return Index{}, fmt.Errorf("corrupt index: size %d but its parts add up to %d", idx.Size, sum)
	}
	return idx, nil
}

// ParseComplete decodes a backup's completion marker (.complete) and checks
// it names backup dir/name and lists valid, distinct file names.
func ParseComplete(doc []byte, dir, name string) (Complete, error) {
	var c Complete
	err := strictJSON(doc, &c)
	if later := laterThan(doc, c.Version, err, 1, "completion marker"); later != nil {
		return Complete{}, later
	}
	if err != nil {
		return Complete{}, fmt.Errorf("corrupt completion marker: %w", err)
	}
	if c.Version != 1 {
		return Complete{}, fmt.Errorf("corrupt completion marker: version %d, want 1", c.Version)
	}
	if c.Backup != dir+"/"+name {
		return Complete{}, fmt.Errorf("completion marker is for backup %s", c.Backup)
	}
	if c.Bytes < 0 || c.Parts < 0 || c.Parts > MaxParts*len(c.Files) {
		return Complete{}, fmt.Errorf("corrupt completion marker: %d bytes in %d parts", c.Bytes, c.Parts)
	}
	seen := map[string]bool{}
	for _, f := range c.Files {
		if err := checkName("file name", f, false); err != nil {
			return Complete{}, fmt.Errorf("corrupt completion marker: %w", err)
		}
		if seen[f] {
			return Complete{}, fmt.Errorf("corrupt completion marker: file %q listed twice", f)
		}
		seen[f] = true
	}
	return c, nil
}

// strictJSON decodes one JSON object into v; trailing data is an error.
// Unknown fields are allowed (a later version may add some).
func strictJSON(doc []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Index is the JSON document stored as <file>.index once all of a file's
// parts are stored. Version 2 adds a CRC32C per block of BlockSize bytes of
// every part, so a reader verifies each block before it hands out any of its
// bytes without holding a whole part. Version 3 is an encrypted file: each
// block is a frame sealed on its own (see encryption.go); Size is then the
// file's bytes before encryption, and the parts' sizes what is stored.
type Index struct {
	Version    int    `json:"version"`
	Backup     string `json:"backup"`
	File       string `json:"file"`
	PartSize   int64  `json:"part_size"`
	BlockSize  int64  `json:"block_size,omitempty"`
	Encryption string `json:"encryption,omitempty"`
	// SealKey names the signing key of the parts' tags (seal.go); empty:
	// the parts carry none.
	SealKey string      `json:"seal_key,omitempty"`
	Size    int64       `json:"size"`
	Parts   []PartEntry `json:"parts"`
}

// PartEntry describes one part object.
type PartEntry struct {
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	// Blocks holds the big-endian CRC32C of each block of the part (version 2).
	Blocks []byte `json:"blocks,omitempty"`
	// Tags holds the signing key's tag of each block of the part's stored
	// bytes (seal.go), crypt.BlockTagSize bytes each.
	Tags []byte `json:"tags,omitempty"`
}

// Complete is the JSON document stored as .complete, last, by EndBackup.
type Complete struct {
	Version  int       `json:"version"`
	Backup   string    `json:"backup"`
	Finished time.Time `json:"finished"`
	Files    []string  `json:"files"`
	Bytes    int64     `json:"bytes"`
	Parts    int       `json:"parts"`
	// Cost is what writing the backup sent to the store before its seal
	// and this marker (absent in older backups; zero on local disk).
	Cost *backend.Requests `json:"cost,omitempty"`
}

func backupPrefix(dir, name string) string { return dir + "/" + name + "/" }

// PartKey is the object key of part n (1-based) of file in a backup; listing
// order is part order.
func PartKey(dir, name, file string, n int) string {
	return fmt.Sprintf("%s%s%s%08d", backupPrefix(dir, name), file, partInfix, n)
}

// IndexKey is the object key of a file's part index.
func IndexKey(dir, name, file string) string { return backupPrefix(dir, name) + file + indexSuffix }

type startedDoc struct {
	// Storage and Layout name this storage and its layout (ownership.go):
	// empty and 0 in the markers written before layout 1.
	Storage  string    `json:"storage,omitempty"`
	Layout   int       `json:"layout,omitempty"`
	Token    string    `json:"token"`
	Host     string    `json:"host"`
	Started  time.Time `json:"started"`
	PartSize int64     `json:"part_size"`
	// Encryption is the backup's data key, wrapped (nil: in the clear).
	Encryption *crypt.Envelope `json:"encryption,omitempty"`
}

func sidecarKey(dir, name, sidecar string) string {
	return backupPrefix(dir, name) + sidecarPrefix + sidecar
}

type baseDoc struct {
	Base string `json:"base"`
}

type retiredDoc struct {
	At time.Time `json:"at"`
	// Dependents are the backups that depended on it when it was retired.
	Dependents []string        `json:"dependents"`
	Complete   json.RawMessage `json:"complete"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// laterThan is the error of a document (what) whose format version is
// later than newest, the last this version reads: written by a later
// version of the split storage, which this host cannot read and which
// proves nothing about the backup (unreadable, never damage); nil
// otherwise. decoded is the version strictJSON decoded, and decodeErr its
// error: a later format may hold fields this version does not know, so
// after a failed decode the version is read alone (only then: an index can
// be large).
func laterThan(doc []byte, decoded int, decodeErr error, newest int, what string) error {
	if decodeErr != nil {
		var v struct {
			Version int `json:"version"`
		}
		_ = json.Unmarshal(doc, &v)
		decoded = v.Version
	}
	if decoded <= newest {
		return nil
	}
	return unreadable.Error(fmt.Errorf("%s of format version %d, written by a later version of the split storage (this one reads versions up "+
		"to %d): read it with that version or later; nothing says it is damaged", what, decoded, newest))
}
