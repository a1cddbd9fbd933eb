package xbstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Fuzzing (the committed corpus under testdata/fuzz runs with plain `go test`):
//
//	go test ./go/xbstream -run '^$' -fuzz '^FuzzReader$'  -fuzztime 60s
//	go test ./go/xbstream -run '^$' -fuzz '^FuzzExtract$' -fuzztime 60s
//
// or go/xbstream/fuzz.sh [seconds].

func fuzzSeeds(t testing.TB) [][]byte {
	big := patterned(5000, 1)
	return [][]byte{
		newSB(t).p("ibdata1", 0, "abc").e("ibdata1").bytes(),
		newSB(t).file("db/t.ibd", big, 1024).p("x", 0, "").e("x").e("db/empty").bytes(),
		newSB(t).chunk(Chunk{Type: ChunkSparse, Path: "db/c.ibd", Sparse: []SparseSegment{{Skip: 3, Len: 2}, {Skip: 100, Len: 0}},
			Payload: []byte("ab")}).e("db/c.ibd").bytes(),
		newSB(t).chunk(Chunk{Flags: FlagIgnorable, Type: 'Z', Path: "meta", Payload: []byte("x")}).p("a", 0, "1").e("a").bytes(),
		newSB(t).p("a", 0, "1").e("a").p("b", 0, "2").p("a", 0, "again").e("a").e("b").bytes(),
		newSB(t).p("../evil", 0, "x").bytes(),
		newSB(t).p("a", 3, "def").p("a", 0, "abc").e("a").bytes(),
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
		for _, l := range splitBytes(f, s, 2) {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), WithMaxChunkSize(1<<20))
		var out bytes.Buffer
		w := NewWriter(&out)
		for {
			c, err := r.Next()
			if err == io.EOF {
				require.Equal(t, int64(len(data)), r.Offset())
				break
			}
			if err != nil {
				var fe *FormatError
				require.True(t, errors.As(err, &fe), "error of type %T: %v", err, err)
				require.LessOrEqual(t, r.Offset(), int64(len(data)))
				break
			}
			require.LessOrEqual(t, len(c.Payload), 1<<20)
			require.LessOrEqual(t, len(c.Path), MaxPathLen)
			// The encoding is canonical: every chunk read re-encodes to the
			// very bytes it was read from.
			require.NoError(t, w.WriteChunk(c))
			require.Equal(t, r.Offset(), int64(out.Len()))
		}
		require.True(t, bytes.Equal(data[:out.Len()], out.Bytes()))
	})
}

// FuzzExtract feeds a stream to Extract as one plain lane, as split lanes, and
// cut into arbitrary (hostile) lanes. Whatever happens, nothing may appear
// outside the target directory; when the plain lane extracts, the split lanes
// must extract to the same tree.
func FuzzExtract(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(byte(i), s)
	}
	f.Fuzz(func(t *testing.T, sel byte, data []byte) {
		parent := t.TempDir()
		outside := filepath.Join(parent, "outside")
		require.NoError(t, os.Mkdir(outside, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(outside, "canary"), []byte("c"), 0o644))
		dir := filepath.Join(parent, "out")
		require.NoError(t, os.Mkdir(dir, 0o755))
		// A symlink out of the target directory that a stream may try to use.
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape")))
		opts := ExtractOptions{MaxChunkSize: 1 << 20, AllowCut: true}

		extract := func(name string, lanes [][]byte) (map[string]string, error) {
			d := filepath.Join(dir, name)
			_, err := Extract(context.Background(), d, readers(lanes), opts)
			if err != nil {
				return nil, err
			}
			return readTree(t, d), nil
		}
		plain, plainErr := extract("plain", [][]byte{data})
		n := 1 + int(sel%4)
		if lanes, err := trySplit(data, n); err == nil {
			split, splitErr := extract("split", lanes)
			if plainErr == nil {
				require.NoError(t, splitErr, "plain lane extracted but %d split lanes did not", n)
				require.Equal(t, plain, split)
			}
		}
		// Arbitrary lanes: cut the bytes into n pieces.
		var hostile [][]byte
		rest := data
		for i := 0; i < n-1 && len(rest) > 0; i++ {
			k := (int(sel)*31 + i*17) % (len(rest) + 1)
			hostile = append(hostile, rest[:k])
			rest = rest[k:]
		}
		hostile = append(hostile, rest)
		_, _ = extract("hostile", hostile)

		// Nothing outside the target directory changed.
		entries, err := os.ReadDir(outside)
		require.NoError(t, err)
		require.Len(t, entries, 1, "something was written outside the target directory")
		entries, err = os.ReadDir(parent)
		require.NoError(t, err)
		require.Len(t, entries, 2)
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 && p != filepath.Join(dir, "escape") {
				return fmt.Errorf("unexpected symlink %s", p)
			}
			return nil
		}))
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz from real mariabackup chunks
// and the synthetic seeds. Run with XBSTREAM_WRITE_CORPUS=1.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("XBSTREAM_WRITE_CORPUS") == "" {
		t.Skip("set XBSTREAM_WRITE_CORPUS=1 to regenerate the fuzz seed corpus")
	}
	// Real chunks: the whole chunks of the small files of a real stream.
	f, err := os.Open(realStream(t))
	require.NoError(t, err)
	defer f.Close()
	r := NewReader(f)
	var real bytes.Buffer
	w := NewWriter(&real)
	kept := map[string]bool{}
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if c.Type == ChunkEOF && kept[c.Path] || c.Type == ChunkPayload && c.Offset == 0 && len(c.Payload) <= 1024 && len(kept) < 6 {
			kept[c.Path] = true
			require.NoError(t, w.WriteChunk(c))
		}
	}
	require.NotEmpty(t, kept)
	t.Logf("real chunks of %v (%d bytes)", kept, real.Len())
	seeds := append([][]byte{real.Bytes()}, fuzzSeeds(t)...)
	write := func(target string, i int, args ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n")
		for _, a := range args {
			switch v := a.(type) {
			case byte:
				fmt.Fprintf(&b, "byte(%d)\n", v)
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", v)
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), b.Bytes(), 0o644))
	}
	for i, s := range seeds {
		write("FuzzReader", i, s)
		write("FuzzExtract", i, byte(i), s)
		lanes := splitBytes(t, s, 2)
		write("FuzzReader", 100+i, lanes[0])
	}
}
