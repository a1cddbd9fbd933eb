package splitstorage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// A sealed backup carries tamper evidence without encryption: with a
// signing key (--split-storage-signing-key-file), every part's index entry
// holds a tag of the part's bytes (bound to backup, file and part), and the
// seal (.seal, written before the completion marker) holds the SHA-256 of
// each document (start, base and completion markers, every index) and a tag
// over all of it, bound to the backup's name. A reader with the key checks
// the seal before it trusts any document, each index against it, and each
// part's bytes against its tag: a part replaced by another whose CRC32C
// matches, an edited MANIFEST (a file like any other), a replaced index, a
// seal or marker moved from another backup, each is refused naming what was
// forged. Without a key nothing is checked and nothing changes; a backup
// written without one carries no seal, which show says, and which a reader
// with a key refuses unless --split-storage-accept-unsealed.
const sealMarker = ".seal"

type sealDoc struct {
	Version   int    `json:"version"`
	Algorithm string `json:"algorithm"`
	Backup    string `json:"backup"`
	Key       string `json:"key"`
	// Objects are the SHA-256 of each document's bytes, by key relative to
	// the backup.
	Objects map[string][]byte `json:"objects"`
	Tag     []byte            `json:"tag,omitempty"`
}

// ErrForged is wrapped by the error of a backup whose seal, documents or
// parts are not the ones sealed; it is damage (ErrDamaged) as well.
var ErrForged = crypt.ErrForged

func sealContext(backup string) string { return "seal\x00" + backup }

func partContext(backup, file string, n int) string {
	return "part\x00" + backup + "\x00" + file + "\x00" + strconv.Itoa(n)
}

// forged is the error of something sealed that does not check: damage.
func forged(what string, err error) error {
	if errors.Is(err, crypt.ErrUnknownSealKey) {
		// This host's key file lacks the key: nothing says the backup is forged.
		return unreadable.Error(fmt.Errorf("%s: cannot be checked: %w", what, err))
	}
	return fmt.Errorf("%s: %w: %w", what, err, ErrDamaged)
}

// blockTagger tags a part's blocks, each under its own context (the
// part's and the block's number), as they are written or read.
type blockTagger struct {
	mac  hash.Hash
	part string // partContext
	blk  int
	tags []byte // the tags of the blocks ended (the write side)
}

func newBlockTagger(mac hash.Hash, part string) *blockTagger {
	t := &blockTagger{mac: mac, part: part}
	crypt.Begin(mac, t.context())
	return t
}

func (t *blockTagger) context() string { return t.part + "\x00" + strconv.Itoa(t.blk) }

// write adds bytes of the current block.
func (t *blockTagger) write(b []byte) { t.mac.Write(b) }

// endBlock tags the current block and begins the next.
func (t *blockTagger) endBlock() {
	t.tags = crypt.BlockTag(t.tags, t.mac)
	t.blk++
	crypt.Begin(t.mac, t.context())
}

// tagOf is block blk's tag of data (the read side).
func (t *blockTagger) tagOf(blk int, data []byte) []byte {
	t.blk = blk
	crypt.Begin(t.mac, t.context())
	t.mac.Write(data)
	return crypt.BlockTag(nil, t.mac)
}

// partTagger returns the tagger of part n of file as it is written, or
// nil when this backup is not sealed.
func (h *Handle) partTagger(file string, n int) (*blockTagger, error) {
	if h.e.seals == nil {
		return nil, nil
	}
	mac, err := h.e.seals.NewMAC(h.e.seals.CurrentID())
	if err != nil {
		return nil, err
	}
	return newBlockTagger(mac, partContext(h.dir+"/"+h.name, file, n)), nil
}

// sealKey is the key an index written now records for its part tags.
func (h *Handle) sealKey() string {
	if h.e.seals == nil {
		return ""
	}
	return h.e.seals.CurrentID()
}

// writeSeal stores the seal of this backup, whose completion marker will
// be complete, before the marker: a backup is never complete unsealed.
func (h *Handle) writeSeal(ctx context.Context, complete []byte, indexSums map[string][]byte) error {
	if h.e.seals == nil {
		return nil
	}
	sum := func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
	d := sealDoc{Version: 1, Algorithm: crypt.SealAlgorithm, Backup: h.dir + "/" + h.name, Key: h.e.seals.CurrentID(),
		Objects: map[string][]byte{startedMarker: sum(h.started), completeMarker: sum(complete)}}
	if h.baseDoc != nil {
		d.Objects[baseMarker] = sum(h.baseDoc)
	}
	for file, s := range indexSums {
		d.Objects[file+indexSuffix] = s
	}
	body, _ := json.Marshal(d)
	tag, err := h.e.seals.Tag(d.Key, sealContext(d.Backup), body)
	if err != nil {
		return err
	}
	d.Tag = tag
	doc, _ := json.Marshal(d)
	return h.e.be.Put(ctx, backupPrefix(h.dir, h.name)+sealMarker, bytes.NewReader(doc), int64(len(doc)), h.putOptions(crc32c(doc)))
}

// checkSeal checks this backup's seal and the markers it covers, once per
// handle; nil without a signing key. An unsealed backup is refused unless
// --split-storage-accept-unsealed.
func (h *Handle) checkSeal(ctx context.Context) error { return h.checkSealWith(ctx, nil) }

// checkSealWith is checkSeal with the completion marker to check (a copy's
// destination before its marker is written); nil: the one stored.
func (h *Handle) checkSealWith(ctx context.Context, complete []byte) error {
	if h.e.seals == nil {
		return nil
	}
	h.sealOnce.Do(func() {
		if h.seal, h.sealErr = h.readSeal(ctx, complete); h.sealErr != nil {
			h.sealErr = h.placed(ctx, h.sealErr)
		}
	})
	return h.sealErr
}

func (h *Handle) readSeal(ctx context.Context, complete []byte) (*sealDoc, error) {
	backup := h.dir + "/" + h.name
	prefix := backupPrefix(h.dir, h.name)
	doc, err := readSmall(ctx, h.e.be, prefix+sealMarker)
	switch {
	case errors.Is(err, ErrNotExist) && h.e.cfg.AcceptUnsealed:
		return nil, nil
	case errors.Is(err, ErrNotExist):
		return nil, h.unsealed(ctx, backup)
	case err != nil:
		return nil, fmt.Errorf("split storage: backup %s: reading its seal: %w", backup, err)
	}
	var d sealDoc
	err = strictJSON(doc, &d)
	if later := laterThan(doc, d.Version, err, 1, "a seal"); later != nil {
		return nil, fmt.Errorf("split storage: backup %s: its seal: %w", backup, later)
	}
	if err != nil || d.Version != 1 {
		return nil, forged("split storage: backup "+backup+": its seal", fmt.Errorf("not a seal version 1 (%v): %w", err, ErrForged))
	}
	if err := h.checkSealTag(d, backup); err != nil {
		what := "split storage: backup " + backup + ": its seal"
		if d.Backup != backup {
			what += " (the seal of backup " + d.Backup + ", moved here)"
		}
		return nil, forged(what, err)
	}
	for _, m := range []string{startedMarker, baseMarker, completeMarker} {
		if err := h.checkMarker(ctx, &d, m, complete); err != nil {
			return nil, err
		}
	}
	return &d, nil
}

// checkSealTag checks seal d's tag, sealed for backup.
func (h *Handle) checkSealTag(d sealDoc, backup string) error {
	tag := d.Tag
	d.Tag = nil
	body, _ := json.Marshal(d)
	return h.e.seals.CheckTag(d.Key, sealContext(backup), body, tag)
}

// checkMarker checks marker m against the seal: its bytes hash as sealed,
// or (the base) it is absent where the seal has none.
func (h *Handle) checkMarker(ctx context.Context, d *sealDoc, m string, complete []byte) error {
	prefix := backupPrefix(h.dir, h.name)
	var doc []byte
	var err error
	switch {
	case m == completeMarker && complete != nil:
		doc = complete
	case m == completeMarker:
		doc, err = savedComplete(ctx, h.e.be, prefix, true)
	default:
		doc, err = readSmall(ctx, h.e.be, prefix+m)
	}
	want, sealed := d.Objects[m]
	switch {
	case errors.Is(err, ErrNotExist) && !sealed:
		return nil
	case errors.Is(err, ErrNotExist):
		return forged("split storage: backup "+d.Backup+": "+m, fmt.Errorf("sealed but missing: %w", ErrForged))
	case err != nil:
		return fmt.Errorf("split storage: backup %s: reading %s: %w", d.Backup, m, err)
	}
	if s := sha256.Sum256(doc); !sealed || !bytes.Equal(s[:], want) {
		return forged("split storage: backup "+d.Backup+": "+m, fmt.Errorf("not the sealed one: %w", ErrForged))
	}
	return nil
}

// checkIndexSeal checks a file's index bytes against the seal.
func (h *Handle) checkIndexSeal(ctx context.Context, file string, doc []byte) error {
	if err := h.checkSeal(ctx); err != nil || h.seal == nil {
		return err
	}
	want, ok := h.seal.Objects[file+indexSuffix]
	if s := sha256.Sum256(doc); !ok || !bytes.Equal(s[:], want) {
		return forged(fmt.Sprintf("split storage: %s: its index", h.where(file)), fmt.Errorf("not the sealed one: %w", ErrForged))
	}
	return nil
}

// checkBlockTag checks block blk of part n of file, before any of its
// bytes is used.
func (h *Handle) checkBlockTag(t *blockTagger, file string, n, blk int, data []byte, want PartEntry) error {
	if t == nil {
		return nil
	}
	if got := t.tagOf(blk, data); 8*blk+crypt.BlockTagSize > len(want.Tags) || !bytes.Equal(got, want.Tags[8*blk:8*blk+crypt.BlockTagSize]) {
		return forged(fmt.Sprintf("split storage: %s, part %d, block %d: its bytes", h.where(file), n, blk),
			fmt.Errorf("not the ones sealed (the tag differs; a CRC32C can be made to match): %w", ErrForged))
	}
	return nil
}

// readTagger is the tagger that checks part n of a file as it is read:
// nil when the backup is not sealed or no key is set.
func (h *Handle) readTagger(sealKey, file string, n int) (*blockTagger, error) {
	if h.e.seals == nil || h.seal == nil || sealKey == "" {
		return nil, nil
	}
	mac, err := h.e.seals.NewMAC(sealKey)
	if err != nil {
		return nil, forged(fmt.Sprintf("split storage: %s, part %d", h.where(file), n), err)
	}
	return newBlockTagger(mac, partContext(h.dir+"/"+h.name, file, n)), nil
}

// unsealed is the error of a backup without a seal read while a signing
// key is set. Its indexes say which it is: one that names a signing key
// was written sealed and its seal removed (forged: damage); where none
// does, it was written without a key, which proves nothing about it
// either way: it cannot be checked (unreadable, as a seal of a key this
// host lacks), and --split-storage-accept-unsealed reads it unchecked.
func (h *Handle) unsealed(ctx context.Context, backup string) error {
	prefix := backupPrefix(h.dir, h.name)
	objs, err := h.e.be.List(ctx, prefix, false)
	if err != nil {
		return fmt.Errorf("split storage: backup %s carries no seal; listing its indexes: %w", backup, err)
	}
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, indexSuffix) || !ownKey(prefix, o.Key) {
			continue
		}
		doc, err := readSmall(ctx, h.e.be, o.Key)
		if err != nil {
			return fmt.Errorf("split storage: backup %s carries no seal; reading its index %s: %w", backup, o.Key, err)
		}
		var idx struct {
			SealKey string `json:"seal_key"`
		}
		if json.Unmarshal(doc, &idx) == nil && idx.SealKey != "" {
			return fmt.Errorf("split storage: backup %s carries no seal, but its index %s says its parts were sealed with key %s: its seal was "+
				"removed: %w: %w", backup, strings.TrimPrefix(o.Key, prefix), idx.SealKey, ErrForged, ErrDamaged)
		}
	}
	return unreadable.Error(fmt.Errorf("split storage: backup %s cannot be checked: it carries no seal, and none of its indexes names a "+
		"signing key (written without --%s): refused while a signing key is set (--%s reads it unchecked); nothing says it is damaged",
		backup, flagSigningKeyFile, flagAcceptUnsealed))
}

// SealState says whether a backup is sealed, with which key, and whether
// this storage checked it: for show.
func (h *Handle) SealState(ctx context.Context) (string, error) {
	doc, err := readSmall(ctx, h.e.be, backupPrefix(h.dir, h.name)+sealMarker)
	if errors.Is(err, ErrNotExist) {
		return "carries no MAC (written without a signing key)", nil
	}
	if err != nil {
		return "", err
	}
	var d sealDoc
	if err := strictJSON(doc, &d); err != nil {
		return "", forged("split storage: backup "+h.dir+"/"+h.name+": its seal", err)
	}
	if h.e.seals == nil {
		return fmt.Sprintf("sealed with key %s (%s); not checked here: no --%s", d.Key, d.Algorithm, flagSigningKeyFile), nil
	}
	if err := h.checkSeal(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("sealed with key %s (%s): seal and markers check", d.Key, d.Algorithm), nil
}

// tagSink checks a part's block tags as its bytes stream through it (verify
// reads parts whole); close checks the last, partial, block.
type tagSink struct {
	h         *Handle
	t         *blockTagger
	file      string
	n         int
	want      PartEntry
	blockSize int64
	in        int64 // bytes of the current block
	blk       int
	data      []byte // the current block's bytes
}

func (s *tagSink) Write(b []byte) (int, error) {
	total := len(b)
	for len(b) > 0 {
		k := min(int64(len(b)), s.blockSize-s.in)
		s.data = append(s.data, b[:k]...)
		s.in += k
		b = b[k:]
		if s.in == s.blockSize {
			if err := s.endBlock(); err != nil {
				return 0, err
			}
		}
	}
	return total, nil
}

func (s *tagSink) endBlock() error {
	err := s.h.checkBlockTag(s.t, s.file, s.n, s.blk, s.data, s.want)
	s.blk, s.in, s.data = s.blk+1, 0, s.data[:0]
	return err
}

func (s *tagSink) close() error {
	if s.in > 0 {
		return s.endBlock()
	}
	return nil
}

// A record stored beside a sealed backup (a sidecar: the test restore's
// record) is stored in an envelope with its tag, bound to the backup and
// the record's name, in one object (a replacement is whole or not made):
// a record moved from another backup, or edited, does not check.
type sealedSidecar struct {
	Sealed int    `json:"sealed_sidecar"`
	Key    string `json:"key"`
	Tag    []byte `json:"tag"`
	Doc    []byte `json:"doc"`
}

func sidecarContext(backup, sidecar string) string { return "sidecar\x00" + backup + "\x00" + sidecar }

// sealSidecar wraps doc in its envelope when this storage seals.
func (h *Handle) sealSidecar(sidecar string, doc []byte) ([]byte, error) {
	if h.e.seals == nil {
		return doc, nil
	}
	id := h.e.seals.CurrentID()
	tag, err := h.e.seals.Tag(id, sidecarContext(h.dir+"/"+h.name, sidecar), doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(sealedSidecar{Sealed: 1, Key: id, Tag: tag, Doc: doc})
}

// openSidecar returns a stored sidecar's document: out of its envelope,
// checked with a signing key; one without an envelope beside a sealed
// backup is refused with a key (unless --split-storage-accept-unsealed).
func (h *Handle) openSidecar(ctx context.Context, sidecar string, stored []byte) ([]byte, error) {
	var env sealedSidecar
	enveloped := json.Unmarshal(stored, &env) == nil && env.Sealed == 1
	what := fmt.Sprintf("split storage: backup %s/%s: its %s", h.dir, h.name, sidecar)
	switch {
	case h.e.seals == nil && enveloped:
		return env.Doc, nil
	case h.e.seals == nil:
		return stored, nil
	case enveloped:
		if err := h.e.seals.CheckTag(env.Key, sidecarContext(h.dir+"/"+h.name, sidecar), env.Doc, env.Tag); err != nil {
			return nil, forged(what, err)
		}
		return env.Doc, nil
	}
	if err := h.checkSeal(ctx); err != nil || h.seal == nil {
		return stored, err // an unsealed backup (accepted) has unsealed records
	}
	return nil, forged(what, fmt.Errorf("carries no tag beside a sealed backup: %w", ErrForged))
}
