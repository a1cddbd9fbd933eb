package xbstream

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verifyCases are good and damaged streams (plain and split) that Verify
// must judge exactly as Extract does.
func verifyCases(t *testing.T) map[string][][]byte {
	data := patterned(200_000, 3)
	good := newSB(t).file("db/t.ibd", data, 10_000).file("ibdata1", data[:50_000], 10_000).bytes()
	split := splitBytes(t, good, 3)
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x01
	flippedLane := [][]byte{split[0], append([]byte(nil), split[1]...), split[2]}
	flippedLane[1][len(flippedLane[1])/3] ^= 0x80
	return map[string][][]byte{
		"good-plain":        {good},
		"good-split":        split,
		"good-fifo":         {newSB(t).p("a", 0, "aa").e("a").bytes(), newSB(t).p("b", 0, "b").e("b").bytes()},
		"flipped-byte":      {flipped},
		"flipped-in-lane":   flippedLane,
		"truncated":         {good[:len(good)-7]},
		"truncated-lane":    {split[0], split[1][:len(split[1])/2], split[2]},
		"missing-lane":      split[:2],
		"repeated-lane":     {split[0], split[0], split[2]},
		"gap":               {newSB(t).p("a", 0, "abc").p("a", 10, "xyz").e("a").bytes()},
		"overlap":           {newSB(t).p("a", 0, "abc").p("a", 1, "xyz").e("a").bytes()},
		"out-of-order":      {newSB(t).p("a", 3, "def").p("a", 0, "abc").e("a").bytes()},
		"missing-eof-plain": {newSB(t).p("a", 0, "abc").bytes()},
		"traversal":         {newSB(t).p("../etc/passwd", 0, "x").e("../etc/passwd").bytes()},
		"absolute":          {newSB(t).p("/etc/passwd", 0, "x").e("/etc/passwd").bytes()},
		"garbage":           {[]byte("XBSTCK02 not a chunk at all")},
	}
}

func TestVerifyAgreesWithExtract(t *testing.T) {
	for name, lanes := range verifyCases(t) {
		t.Run(name, func(t *testing.T) {
			_, est, eerr := extractLanes(t, lanes, ExtractOptions{})
			vst, verr := Verify(context.Background(), readers(lanes), ExtractOptions{})
			if eerr == nil {
				require.NoError(t, verr, "Extract accepted the stream, Verify did not")
				assert.Equal(t, est, vst, "Verify's stats differ from Extract's")
				return
			}
			require.Error(t, verr, "Extract refused the stream (%v), Verify accepted it", eerr)
			// With several lanes failing, which lane reports first is a race.
			assert.Equal(t, withoutLane(eerr.Error()), withoutLane(verr.Error()), "Verify's error differs from Extract's")
			if !hasPrefix(name, "good") {
				t.Logf("%s: %v", name, verr)
			}
		})
	}
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

var lanePrefix = regexp.MustCompile(`^lane \d+: `)

func withoutLane(s string) string { return lanePrefix.ReplaceAllString(s, "") }

// TestVerifyWritesNothing: Verify runs in a directory and leaves it empty.
func TestVerifyWritesNothing(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir))
	t.Cleanup(func() { _ = os.Chdir(wd) })
	for _, lanes := range verifyCases(t) {
		_, _ = Verify(context.Background(), readers(lanes), ExtractOptions{})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
	_, err = os.Stat(filepath.Join(dir, "db"))
	assert.True(t, os.IsNotExist(err))
}

func TestVerifyNamesTheDamage(t *testing.T) {
	cases := verifyCases(t)
	_, err := Verify(context.Background(), readers(cases["flipped-in-lane"]), ExtractOptions{})
	require.ErrorIs(t, err, ErrChecksum)
	var le *LaneError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 1, le.Lane)
	assert.Contains(t, err.Error(), "offset")

	_, err = Verify(context.Background(), readers(cases["truncated-lane"]), ExtractOptions{})
	require.Error(t, err)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 1, le.Lane)

	_, err = Verify(context.Background(), readers(cases["missing-eof-plain"]), ExtractOptions{})
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	_, err = Verify(context.Background(), nil, ExtractOptions{})
	require.Error(t, err)
}

// FuzzVerify: on any input, Verify accepts exactly what Extract accepts, with
// the same error, and writes nothing.
func FuzzVerify(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(byte(i), s)
	}
	f.Fuzz(func(t *testing.T, sel byte, data []byte) {
		opts := ExtractOptions{MaxChunkSize: 1 << 20}
		lanes := [][]byte{data}
		if n := 1 + int(sel%4); n > 1 {
			if l, err := trySplit(data, n); err == nil {
				lanes = l
			}
		}
		_, eerr := Extract(context.Background(), filepath.Join(t.TempDir(), "out"), readers(lanes), opts)
		_, verr := Verify(context.Background(), readers(lanes), opts)
		var pe *fs.PathError
		if errors.As(eerr, &pe) {
			// A write the filesystem refused (an offset past its largest
			// file size): Verify writes nothing, so it cannot see it.
			return
		}
		if (eerr == nil) != (verr == nil) {
			t.Fatalf("Extract: %v; Verify: %v", eerr, verr)
		}
		if eerr != nil && len(lanes) == 1 && eerr.Error() != verr.Error() {
			t.Fatalf("errors differ: Extract: %v; Verify: %v", eerr, verr)
		}
	})
}

// TestVerifyKeepsTheFilesAskedFor: Keep gives the contents of the files it
// accepts, whole, however their chunks were dealt to the lanes; a file past
// MaxKeptBytes or with a sparse chunk is left out, and Extract keeps the
// same while it writes.
func TestVerifyKeepsTheFilesAskedFor(t *testing.T) {
	info := patterned(3000, 7)
	big := patterned(MaxKeptBytes+1, 3)
	s := newSB(t).file("xtrabackup_info", info, 100).file("db/t.ibd", patterned(5000, 1), 700).file("big", big, 1<<16)
	s.chunk(Chunk{Type: ChunkSparse, Path: "holes", Offset: 0, Sparse: []SparseSegment{{Skip: 10, Len: 3}}, Payload: []byte("abc")}).e("holes")
	lanes := splitBytes(t, s.bytes(), 3)
	keep := func(p string) bool { return p != "db/t.ibd" }

	st, err := Verify(context.Background(), readers(lanes), ExtractOptions{Keep: keep})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"xtrabackup_info": info}, st.Kept)

	st, err = Extract(context.Background(), t.TempDir(), readers(lanes), ExtractOptions{Keep: keep})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"xtrabackup_info": info}, st.Kept)

	st, err = Verify(context.Background(), readers(lanes), ExtractOptions{})
	require.NoError(t, err)
	assert.Nil(t, st.Kept, "nothing kept unless asked")
}
