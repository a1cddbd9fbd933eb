package splitstorage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// A part waits on local disk, in a spool file, from its first byte until its
// upload ends: the process holds no part in memory, so memory does not grow
// with the part size or the number of files written at once, and a retry
// reads the part again from the file. Spool files have no name (see
// createSpoolFile): a killed process leaves nothing behind.
//
// Disk: every file open for writing fills one part, and each backup uploads
// up to --split-storage-upload-concurrency more; a full part waits for an
// upload slot before its file starts the next one. Those bytes are reserved
// against the free space of the spool directory when the backup starts and
// when each file is added, so a backup that cannot fit fails before the tool
// runs, naming the directory, the space and the flags.
type spool struct {
	dir string

	mu       sync.Mutex
	reserved int64        // bytes promised to open files and running backups
	live     atomic.Int64 // bytes in this process's spool files now (already out of the free space)
}

var (
	spoolsMu sync.Mutex
	spools   = map[string]*spool{}
)

// spoolFor returns the process-wide spool of dir (empty: os.TempDir()): every
// storage instance spooling there shares one reservation account.
func spoolFor(dir string) *spool {
	if dir == "" {
		dir = os.TempDir()
	}
	spoolsMu.Lock()
	defer spoolsMu.Unlock()
	if s := spools[dir]; s != nil {
		return s
	}
	s := &spool{dir: dir}
	spools[dir] = s
	return s
}

// spaceOf is the space available to this process in dir and the size of
// its file system; tests replace it.
var spaceOf = diskSpace

// available is what the spool can still promise: the free space, plus what
// its own files take now (they are counted in reserved), less the promises
// and what it keeps (spoolKeep).
func (s *spool) available() (avail, keep int64, err error) {
	free, size, err := spaceOf(s.dir)
	if err != nil {
		return 0, 0, fmt.Errorf("split storage: checking the free space of the spool directory %s (--split-storage-spool-dir): %w", s.dir, err)
	}
	keep = size / spoolKeep
	return free + s.live.Load() - s.reserved - keep, keep, nil
}

// spoolKeep: the spool never promises the last 1/spoolKeep of its file
// system, which it may share with a live mysqld (--split-storage-spool-dir
// on the data disk): a server that cannot write its binary log stops.
const spoolKeep = 100

// reserve promises n bytes of the spool for what, or fails naming the space
// missing and the flags that size it.
func (s *spool) reserve(n int64, what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	avail, keep, err := s.available()
	if err != nil {
		return err
	}
	if n > avail {
		// This host's disk, never the backup's: no verdict on anything read.
		return unreadable.Host(fmt.Errorf("split storage: the spool directory %s (--split-storage-spool-dir) cannot hold %s: it needs %s, and %s are free there beyond "+
			"the %s promised to the files and backups of this process and the %s left to whatever else writes there (1%% of its file system): free "+
			"space there, point --split-storage-spool-dir at a larger disk, or lower --split-storage-part-size, --split-storage-upload-concurrency or "+
			"the files written at once (for the fifo engine, --fifo-backup-lanes)",
			s.dir, what, flagvalue.SizeText(n), flagvalue.SizeText(max(avail, 0)), flagvalue.SizeText(s.reserved), flagvalue.SizeText(keep)),
			"the spool directory's disk lacks room")
	}
	s.reserved += n
	return nil
}

func (s *spool) unreserve(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= n
}

// headroom is how many more parts of partSize the spool could promise now.
func (s *spool) headroom(partSize int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	avail, _, err := s.available()
	if err != nil || avail < 0 {
		return 0
	}
	return int(min(avail/partSize, 1<<20))
}

// spoolPlace is where a storage's parts wait for their upload.
type spoolPlace struct {
	dir string
	// linked: uploads will link the parts rather than copy them (file
	// storage on the spool's file system), so they are written back to disk
	// as they fill (see spoolPart.writeback).
	linked bool
}

// spoolPlace is --split-storage-spool-dir, or when that is empty, the root
// of a backend in a local directory (backend.LocalDir) if it takes files
// without a name (each upload is then a
// link of the spooled part, not a copy of it), else the system's temporary
// directory.
func (c Config) spoolPlace() spoolPlace {
	root := c.LocalRoot()
	dir := c.SpoolDir
	if dir == "" {
		if root != "" && spoolsNameless(root) {
			return spoolPlace{dir: root, linked: true}
		}
		dir = os.TempDir()
	}
	return spoolPlace{dir: dir, linked: root != "" && sameFileSystem(dir, root) && spoolsNameless(dir)}
}

// SpoolCanHold says whether the spool's file system, were it empty, could
// hold files parts being filled at once beside one backup's uploads; the
// error names flag (what sets files) and the allowed values.
func (c Config) SpoolCanHold(files int, flag string) error {
	dir := c.spoolPlace().dir
	size, err := diskSize(dir)
	if err != nil {
		return nil // checked again, against the free space, when a backup starts
	}
	need := c.PartSize * int64(files+c.UploadConcurrency)
	if need <= size {
		return nil
	}
	allowed := "none with these settings"
	if most := size/c.PartSize - int64(c.UploadConcurrency); most >= 1 {
		allowed = fmt.Sprintf("1..%d", most)
	}
	return fmt.Errorf("invalid value \"%d\" for %s: the file system of --split-storage-spool-dir (%s, %s in all) cannot hold a part of "+
		"--split-storage-part-size=%s for each beside --split-storage-upload-concurrency=%d uploads: allowed values are %s (or lower the part size, or "+
		"point the spool at a larger disk)",
		files, flag, dir, flagvalue.SizeText(size), flagvalue.FormatSize(c.PartSize), c.UploadConcurrency, allowed)
}

// crcBlockSize is the unit of the per-block checksums in a part's index entry:
// a reader hands out no byte of a block before the block's checksum matched,
// and needs a buffer of only this size to do so.
const crcBlockSize = 256 << 10

// spoolWriteSize is the buffer that gathers a part's small writes into one
// write of its spool file. A gzip or flate stream hands its writer a few
// hundred bytes at a time, and a system call for each costs far more CPU
// than the bytes (BenchmarkWriteSizes measures it). Writes of this size or
// more go to the file as they come.
const spoolWriteSize = 64 << 10

var spoolBuffers = sync.Pool{New: func() any { return new([spoolWriteSize]byte) }}

// writebackSize is how far a part's file runs ahead of its writeback when it
// is headed for the disk anyway (see spoolPart.writeback).
const writebackSize = 8 << 20

// spoolPart is one part being filled or uploaded.
type spoolPart struct {
	s      *spool
	f      *os.File
	size   int64 // bytes written, buffered ones included
	onDisk int64 // bytes in the file
	// writeback: the part will be linked into a file store on this file
	// system (see local), so its bytes are written back to disk as they come
	// rather than all in the fsync of its upload: closing a backup's files
	// then waits for little. writtenBack is how far that was started; it is
	// started off the writer's path (startWriteback) and waited for before
	// the file is closed.
	writeback   bool
	writtenBack int64
	writing     sync.WaitGroup // the writeback started last, until it returns
	starting    atomic.Bool    // a writeback is being started
	buf         *[spoolWriteSize]byte
	crc         uint32
	blockCRC    uint32
	blocks      []byte       // big-endian CRC32C of each crcBlockSize block, the last one once sealed
	tagger      *blockTagger // the signing key's tags of its blocks (seal.go); nil: none
}

func (s *spool) newPart(writeback bool) (*spoolPart, error) {
	f, err := createSpoolFile(s.dir)
	if err != nil {
		return nil, fmt.Errorf("creating a spool file in %s (--split-storage-spool-dir): %w", s.dir, err)
	}
	return &spoolPart{s: s, f: f, writeback: writeback}, nil
}

func (p *spoolPart) write(b []byte) error {
	if buffered := int(p.size - p.onDisk); buffered+len(b) > spoolWriteSize {
		if err := p.flush(); err != nil {
			return err
		}
	}
	if len(b) >= spoolWriteSize {
		if err := p.writeFile(b); err != nil {
			return err
		}
	} else {
		if p.buf == nil {
			p.buf = spoolBuffers.Get().(*[spoolWriteSize]byte)
		}
		copy(p.buf[p.size-p.onDisk:], b)
	}
	p.crc = crc32.Update(p.crc, castagnoli, b)
	for len(b) > 0 {
		k := min(len(b), int(crcBlockSize-p.size%crcBlockSize))
		p.blockCRC = crc32.Update(p.blockCRC, castagnoli, b[:k])
		if p.tagger != nil {
			p.tagger.write(b[:k])
		}
		p.size += int64(k)
		b = b[k:]
		if p.size%crcBlockSize == 0 {
			p.blocks = binary.BigEndian.AppendUint32(p.blocks, p.blockCRC)
			p.blockCRC = 0
			if p.tagger != nil {
				p.tagger.endBlock()
			}
		}
	}
	return nil
}

// flush writes the buffered bytes to the file.
func (p *spoolPart) flush() error {
	if p.buf == nil {
		return nil
	}
	err := p.writeFile(p.buf[:p.size-p.onDisk])
	spoolBuffers.Put(p.buf)
	p.buf = nil
	return err
}

func (p *spoolPart) writeFile(b []byte) error {
	n, err := p.f.Write(b)
	p.onDisk += int64(n)
	p.s.live.Add(int64(n))
	if err != nil {
		return fmt.Errorf("writing a spool file in %s (--split-storage-spool-dir): %w", p.s.dir, err)
	}
	if p.writeback && p.onDisk-p.writtenBack >= writebackSize {
		p.startWriteback()
	}
	return nil
}

// startWriteback has what the file holds beyond writtenBack written to disk,
// from a goroutine of its own: starting a writeback can wait for the disk's
// queue, and the writer (a lane) must not. While one is being started the
// next waits for a later write, and then covers both ranges.
func (p *spoolPart) startWriteback() {
	if !p.starting.CompareAndSwap(false, true) {
		return
	}
	off, n := p.writtenBack, p.onDisk-p.writtenBack
	p.writtenBack = p.onDisk
	p.writing.Go(func() {
		defer p.starting.Store(false)
		startWriteback(p.f, off, n)
	})
}

// seal writes what is buffered and closes the last block's checksum; the
// part takes no more bytes.
func (p *spoolPart) seal() error {
	if err := p.flush(); err != nil {
		return err
	}
	if p.size%crcBlockSize != 0 {
		p.blocks = binary.BigEndian.AppendUint32(p.blocks, p.blockCRC)
		p.blockCRC = 0
		if p.tagger != nil {
			p.tagger.endBlock()
		}
	}
	return nil
}

// reader reads the sealed part from its start; a retry seeks it back. It is
// also a backend.FileBody: a file store on the spool's file system names the
// file instead of copying it.
func (p *spoolPart) reader() io.ReadSeeker {
	return spoolBody{io.NewSectionReader(p.f, 0, p.size), p.f}
}

type spoolBody struct {
	*io.SectionReader
	f *os.File
}

var _ backend.FileBody = spoolBody{}

func (b spoolBody) BodyFile() *os.File { return b.f }

// PartEntryOf is the index entry of a part holding data, with block
// checksums of blockSize (an index's BlockSize; 0: none, as in version 1).
func PartEntryOf(data []byte, blockSize int64) PartEntry {
	e := PartEntry{Size: int64(len(data)), CRC32C: crc32.Checksum(data, castagnoli)}
	for off := int64(0); blockSize > 0 && off < e.Size; off += blockSize {
		e.Blocks = binary.BigEndian.AppendUint32(e.Blocks, crc32.Checksum(data[off:min(off+blockSize, e.Size)], castagnoli))
	}
	return e
}

func (p *spoolPart) entry() PartEntry {
	e := PartEntry{Size: p.size, CRC32C: p.crc, Blocks: p.blocks}
	if p.tagger != nil {
		e.Tags = p.tagger.tags
	}
	return e
}

// release waits for the part's writeback to have started, then closes the
// file, which frees its disk space (unless a file store linked it).
func (p *spoolPart) release() {
	if p == nil || p.f == nil {
		return
	}
	p.writing.Wait()
	p.f.Close()
	p.s.live.Add(-p.onDisk)
	p.f = nil
	if p.buf != nil {
		spoolBuffers.Put(p.buf)
		p.buf = nil
	}
}

// createUnlinked creates a temporary file in dir and removes its name at once.
func createUnlinked(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "vtfifo-spool-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
