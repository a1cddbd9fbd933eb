// Package xbstream reads, writes, splits, extracts and merges the xbstream
// format written by Percona XtraBackup and MariaDB's mariabackup.
//
// Chunk layout (little-endian), the same in both tools:
//
//	"XBSTCK01" | flags (1) | type (1) | path length (4) | path
//	[payload, sparse and unknown types only:]
//	[sparse only: map count (4)] | payload length (8) | payload offset (8) |
//	CRC32 (4) | [sparse only: count x (skip 4, len 4)] | payload
//
// 'E' (end of file) chunks stop after the path. The CRC32 is ISO-3309 (zlib,
// hash/crc32 IEEE) of the sparse map bytes followed by the payload. Flag 0x01
// marks a chunk of an unknown type as ignorable; both tools read such a chunk
// with the payload layout.
//
// The parallel pieces are Split (one stream dealt to N lanes at chunk
// boundaries, balanced by bytes), Extract (N lanes written concurrently with
// WriteAt into a directory) and Merge (N lanes back into one standard stream).
// Split marks every dealt chunk with a small ignorable sequence record so that
// Extract and Merge reproduce the semantics of `mbstream -x` on the original
// stream exactly; see sequence.go.
package xbstream

import (
	"errors"
	"fmt"
)

// Magic starts every chunk.
const Magic = "XBSTCK01"

// FlagIgnorable marks a chunk whose type a reader does not know as safe to skip.
const FlagIgnorable byte = 0x01

// ChunkType is the one-byte chunk type.
type ChunkType byte

// Chunk types. ChunkSparse is written by Percona XtraBackup only.
const (
	ChunkPayload ChunkType = 'P'
	ChunkEOF     ChunkType = 'E'
	ChunkSparse  ChunkType = 'S'
	// ChunkSequence is this package's own ignorable chunk type: the sequence
	// records Split puts into lanes (see sequence.go). Stock tools skip it
	// (Percona) or would treat it as data (MariaDB, see doc of Extract).
	ChunkSequence ChunkType = 'v'
)

// Known reports whether this package understands chunks of type t.
func (t ChunkType) Known() bool {
	switch t {
	case ChunkPayload, ChunkEOF, ChunkSparse, ChunkSequence:
		return true
	}
	return false
}

func (t ChunkType) String() string {
	if t >= 0x20 && t < 0x7f {
		return fmt.Sprintf("'%c'", byte(t))
	}
	return fmt.Sprintf("0x%02x", byte(t))
}

// DefaultMaxChunkSize bounds a chunk's payload (plus sparse map) unless
// configured otherwise. mariabackup and xtrabackup write chunks of about 10 MiB.
const DefaultMaxChunkSize = 64 << 20

// DefaultMaxPiecedChunkSize bounds a payload chunk that is read in pieces
// (SplitOptions.PieceSize), which never holds the chunk whole: incremental
// deltas are written in clusters of page_size/4 pages (PXB and mariabackup
// write_filt.cc), 1 GiB at 64 KiB pages, and each cluster is one chunk.
const DefaultMaxPiecedChunkSize = 2 << 30

// MaxPathLen is the longest path a chunk may carry: both tools refuse paths of
// FN_REFLEN (512) bytes or more.
const MaxPathLen = 511

// SparseSegment is one entry of a sparse chunk's map: skip Skip bytes (a
// hole), then write the next Len bytes of the payload.
type SparseSegment struct{ Skip, Len uint32 }

// Chunk is one xbstream chunk.
type Chunk struct {
	Flags  byte
	Type   ChunkType
	Path   string
	Offset uint64
	// Sparse is the map of a ChunkSparse chunk (nil otherwise).
	Sparse []SparseSegment
	// Payload is the chunk's data. Chunks returned by Reader.Next share the
	// reader's buffer: the slice is valid until the next call to Next.
	Payload []byte

	// crc is the stored CRC32 as read and verified by a Reader; hasCRC says it
	// is valid for Payload and Sparse, so copying the chunk can skip hashing.
	crc    uint32
	hasCRC bool
}

// Ignorable reports whether c has a type this package does not know but
// carries FlagIgnorable, so readers may skip it.
func (c *Chunk) Ignorable() bool { return !c.Type.Known() && c.Flags&FlagIgnorable != 0 }

// Extent is the number of file bytes the chunk covers from Offset: the payload
// length, plus the holes of a sparse chunk.
func (c *Chunk) Extent() uint64 {
	if c.Type != ChunkSparse {
		return uint64(len(c.Payload))
	}
	var n uint64
	for _, s := range c.Sparse {
		n += uint64(s.Skip) + uint64(s.Len)
	}
	return n
}

// EncodedSize is the number of stream bytes c takes.
func (c *Chunk) EncodedSize() int64 {
	n := int64(len(Magic) + 1 + 1 + 4 + len(c.Path))
	if c.Type == ChunkEOF {
		return n
	}
	if c.Type == ChunkSparse {
		n += 4 + 8*int64(len(c.Sparse))
	}
	return n + 8 + 8 + 4 + int64(len(c.Payload))
}

// Errors wrapped by the errors of this package; test with errors.Is.
var (
	ErrBadMagic      = errors.New("wrong chunk magic")
	ErrUnknownType   = errors.New("unknown chunk type without the ignorable flag")
	ErrChecksum      = errors.New("payload CRC32 mismatch")
	ErrChunkTooLarge = errors.New("chunk larger than the limit")
	ErrPathTooLong   = errors.New("path too long")
	ErrBadSparseMap  = errors.New("bad sparse map")
	ErrBadPath       = errors.New("refused path")
	ErrGap           = errors.New("file has a gap")
	ErrOverlap       = errors.New("chunks overlap")
	ErrOutOfOrder    = errors.New("out-of-order chunk")
	ErrReappears     = errors.New("path appears again after its end-of-file chunk")
	ErrSequence      = errors.New("bad lane sequence")
	ErrStreamCut     = errors.New("stream cut: a path appears again after its end-of-file chunk; mbstream -x stops extracting there")
)

// FormatError describes a problem at a given place of a stream.
type FormatError struct {
	Offset int64  // stream offset of the chunk (or of the problem)
	Path   string // the chunk's path, "" if not read yet
	Msg    string // what was wrong
	Err    error  // the sentinel or I/O error behind it
}

func (e *FormatError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("offset %d: %s: %s", e.Offset, e.Path, e.Msg)
	}
	return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

// LaneError ties an error to a lane of Split, Extract or Merge.
type LaneError struct {
	Lane int
	Err  error
}

// Error is "lane N: " and the error's own message (a Vitess error formats
// itself under %v as its cause, a line break and its message).
func (e *LaneError) Error() string { return fmt.Sprintf("lane %d: %s", e.Lane, e.Err.Error()) }
func (e *LaneError) Unwrap() error { return e.Err }
