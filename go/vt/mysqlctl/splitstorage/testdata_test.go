package splitstorage_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// genReader yields size deterministic pseudo-random bytes for seed, cheaply:
// the 8-byte word at offset o is splitmix64(seed, o/8).
type genReader struct {
	seed      uint64
	off, size int64
}

func newGen(seed uint64, size int64) *genReader { return &genReader{seed: seed, size: size} }

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (g *genReader) fill(p []byte, off int64) {
	var w [8]byte
	for i := 0; i < len(p); {
		o := off + int64(i)
		binary.LittleEndian.PutUint64(w[:], mix(g.seed*0x100000001b3+uint64(o/8)))
		n := copy(p[i:], w[o%8:])
		i += n
	}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.size-g.off)]
	g.fill(p, g.off)
	g.off += int64(len(p))
	return len(p), nil
}

// genBytes returns the whole stream of newGen(seed, size).
func genBytes(seed uint64, size int64) []byte {
	b := make([]byte, size)
	newGen(seed, size).fill(b, 0)
	return b
}

// verifyWriter checks that what is written equals newGen(seed, size).
type verifyWriter struct {
	g   genReader
	buf []byte
	err error
}

func newVerify(seed uint64, size int64) *verifyWriter {
	return &verifyWriter{g: genReader{seed: seed, size: size}, buf: make([]byte, 1<<20)}
}

func (v *verifyWriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		n := min(len(p), len(v.buf))
		if v.g.off+int64(n) > v.g.size {
			v.err = fmt.Errorf("more data than the %d bytes expected", v.g.size)
			return 0, v.err
		}
		v.g.fill(v.buf[:n], v.g.off)
		if !bytes.Equal(v.buf[:n], p[:n]) {
			v.err = fmt.Errorf("data differs in bytes %d..%d", v.g.off, v.g.off+int64(n))
			return 0, v.err
		}
		v.g.off += int64(n)
		p = p[n:]
	}
	return total, nil
}

func (v *verifyWriter) check() error {
	if v.err != nil {
		return v.err
	}
	if v.g.off != v.g.size {
		return fmt.Errorf("got %d bytes, expected %d", v.g.off, v.g.size)
	}
	return nil
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
