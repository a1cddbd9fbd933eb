package xbstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// observedLane is a lane writer that starts a stretch at every chunk
// boundary past every bytes and records the paths each stretch holds, as
// the engine's seekable lanes do.
type observedLane struct {
	bytes.Buffer
	every   int
	starts  []int
	holding [][]string
}

func (l *observedLane) BeginChunk(path string) error {
	if len(l.starts) == 0 || l.Len()-l.starts[len(l.starts)-1] >= l.every {
		l.starts = append(l.starts, l.Len())
		l.holding = append(l.holding, nil)
	}
	h := &l.holding[len(l.holding)-1]
	if len(*h) == 0 || (*h)[len(*h)-1] != path {
		*h = append(*h, path)
	}
	return nil
}

// stretches returns the lane's stretches that hold any of paths, one after
// another.
func (l *observedLane) stretches(want func(string) bool) []byte {
	var out []byte
	for i, start := range l.starts {
		end := l.Len()
		if i+1 < len(l.starts) {
			end = l.starts[i+1]
		}
		if slices.ContainsFunc(l.holding[i], want) {
			out = append(out, l.Bytes()[start:end]...)
		}
	}
	return out
}

func observedSplit(t *testing.T, stream []byte, n, every, pieceSize int) []*observedLane {
	t.Helper()
	lanes := make([]*observedLane, n)
	ws := make([]io.Writer, n)
	for i := range lanes {
		lanes[i] = &observedLane{every: every}
		ws[i] = lanes[i]
	}
	_, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: pieceSize})
	require.NoError(t, err)
	return lanes
}

func TestSelectExtractsFromStretches(t *testing.T) {
	s := newSB(t)
	want := map[string]string{}
	for i := range 40 {
		p := fmt.Sprintf("db/t%02d.ibd", i)
		data := patterned(1000+i*997, byte(i))
		s.file(p, data, 3000)
		want[p] = string(data)
	}
	big := patterned(200<<10, 99)
	s.file("ibdata1", big, 16<<10)
	want["ibdata1"] = string(big)
	s.e("db/empty.ibd")
	want["db/empty.ibd"] = ""
	// One chunk longer than what Extract reads at a time: its pieces are
	// skipped (or written) with its first.
	huge := patterned(3*extractPiece, 5)
	s.file("db/huge.ibd", huge, len(huge))
	want["db/huge.ibd"] = string(huge)
	stream := s.bytes()

	// Whole chunks dealt: the huge chunk stays one chunk.
	lanes := observedSplit(t, stream, 3, 8<<10, 0)
	for _, picked := range [][]string{{"db/t07.ibd"}, {"ibdata1", "db/t39.ibd", "db/empty.ibd"}, {"db/t00.ibd", "db/t01.ibd"}, {"db/huge.ibd", "db/t20.ibd"}} {
		sel := func(p string) bool { return slices.Contains(picked, p) }
		parts := make([][]byte, len(lanes))
		read := 0
		for i, l := range lanes {
			parts[i] = l.stretches(sel)
			read += len(parts[i])
		}
		dir := t.TempDir()
		st, err := Extract(context.Background(), dir, readers(parts), ExtractOptions{Select: sel, ListFiles: true})
		require.NoError(t, err, picked)
		got := readTree(t, dir)
		require.Len(t, got, len(picked))
		for _, p := range picked {
			require.Equal(t, want[p], got[p], p)
			require.Contains(t, st.FileSizes, p)
		}
		if !slices.Contains(picked, "ibdata1") && !slices.Contains(picked, "db/huge.ibd") {
			require.Less(t, read, len(stream)/4, "only the stretches holding %v are read", picked)
		}
	}
}

func TestSelectRefusesIncompleteFiles(t *testing.T) {
	s := newSB(t)
	s.file("a.ibd", patterned(64<<10, 1), 4<<10)
	s.file("b.ibd", patterned(64<<10, 2), 4<<10)
	lanes := observedSplit(t, s.bytes(), 2, 4<<10, 4<<10)
	sel := func(p string) bool { return p == "a.ibd" }
	parts := make([][]byte, len(lanes))
	for i, l := range lanes {
		parts[i] = l.stretches(sel)
	}

	// A stretch left out in the middle of the file: a gap.
	gap := slices.Clone(parts)
	first := lanes[0]
	require.Contains(t, first.holding[0], "a.ibd")
	gap[0] = gap[0][first.starts[1]-first.starts[0]:]
	_, err := Extract(context.Background(), t.TempDir(), readers(gap), ExtractOptions{Select: sel})
	require.ErrorContains(t, err, "a.ibd: file has a gap")

	// The last stretches (with the 'E' chunk) left out: no end of file.
	var cut [][]byte
	for _, l := range lanes {
		var b []byte
		for i := range l.starts {
			if slices.Contains(l.holding[i], "a.ibd") && i < len(l.starts)-1 && !slices.Contains(l.holding[i+1], "b.ibd") {
				end := l.starts[i+1]
				b = append(b, l.Bytes()[l.starts[i]:end]...)
			}
		}
		cut = append(cut, b)
	}
	_, err = Extract(context.Background(), t.TempDir(), readers(cut), ExtractOptions{Select: sel})
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	// Stretches out of order within a lane.
	l := lanes[0]
	require.Greater(t, len(l.starts), 2)
	swapped := append(slices.Clone(l.Bytes()[l.starts[1]:l.starts[2]]), l.Bytes()[l.starts[0]:l.starts[1]]...)
	_, err = Extract(context.Background(), t.TempDir(), readers([][]byte{swapped, parts[1]}), ExtractOptions{Select: sel})
	require.ErrorIs(t, err, ErrSequence)
}

// endObservedLane records, for each chunk dealt to it, the lane's length
// when the chunk began and when it ended.
type endObservedLane struct {
	bytes.Buffer
	begins, ends []int
}

func (l *endObservedLane) BeginChunk(string) error {
	if len(l.begins) != len(l.ends) {
		return fmt.Errorf("chunk %d began before chunk %d ended", len(l.begins), len(l.begins)-1)
	}
	l.begins = append(l.begins, l.Len())
	return nil
}

func (l *endObservedLane) EndChunk() error {
	if len(l.ends) != len(l.begins)-1 {
		return fmt.Errorf("an end without its chunk's beginning (%d begun, %d ended)", len(l.begins), len(l.ends))
	}
	l.ends = append(l.ends, l.Len())
	return nil
}

// TestChunkEndObserver: every chunk dealt to a lane, whole or in pieces, is
// ended once, after all of its bytes (its sequence record, header and
// payload) were written and before the next begins; cut and end records are
// neither begun nor ended.
func TestChunkEndObserver(t *testing.T) {
	s := newSB(t)
	for i := range 30 {
		s.file(fmt.Sprintf("db/t%02d.ibd", i), patterned(500+i*811, byte(i)), 4096)
	}
	stream := s.bytes()
	for _, piece := range []int{0, 1024} {
		lanes := make([]*endObservedLane, 3)
		ws := make([]io.Writer, len(lanes))
		for i := range lanes {
			lanes[i] = &endObservedLane{}
			ws[i] = lanes[i]
		}
		stats, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: piece})
		require.NoError(t, err)
		for i, l := range lanes {
			require.Len(t, l.ends, len(l.begins), "piece %d lane %d", piece, i)
			require.EqualValues(t, stats[i].Chunks, len(l.ends), "piece %d lane %d", piece, i)
			for j := range l.begins {
				next := l.Len()
				if j+1 < len(l.begins) {
					next = l.begins[j+1]
				}
				require.Greater(t, l.ends[j], l.begins[j], "chunk %d wrote bytes before its end", j)
				require.LessOrEqual(t, l.ends[j], next, "chunk %d ended before the next began", j)
			}
			require.Less(t, l.ends[len(l.ends)-1], l.Len(), "lane %d: the end record follows the last chunk, unannounced", i)
		}
	}
}
