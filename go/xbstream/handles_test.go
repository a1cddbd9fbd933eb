package xbstream

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

func TestExtractSmallHandleCache(t *testing.T) {
	// Many files interleaved across lanes with room for one open handle:
	// files are closed and reopened, and no handle leaks.
	s := newSB(t)
	want := map[string]string{}
	for round := 0; round < 5; round++ {
		for f := 0; f < 30; f++ {
			p := fmt.Sprintf("db%d/f%02d", f%3, f)
			data := string(patterned(100, byte(round*31+f)))
			s.p(p, uint64(round*100), data)
			want[p] += data
		}
	}
	for f := 0; f < 30; f++ {
		s.e(fmt.Sprintf("db%d/f%02d", f%3, f))
	}
	stream := s.bytes()
	before := openFDs(t)
	for _, n := range []int{1, 3, 8} {
		lanes := [][]byte{stream}
		if n > 1 {
			lanes = splitBytes(t, stream, n)
		}
		dir, st, err := extractLanes(t, lanes, ExtractOptions{MaxOpenFiles: 1})
		require.NoError(t, err)
		assert.Equal(t, 30, st.Files)
		assert.Equal(t, want, readTree(t, dir))
	}
	assert.Equal(t, before, openFDs(t), "file handles leaked")
}
