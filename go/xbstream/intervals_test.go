package xbstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIntervalsMergeAdjacentAndRefuseOverlaps(t *testing.T) {
	t.Run("adjacent ranges in stream order merge", func(t *testing.T) {
		var ivs intervals
		require.NoError(t, ivs.insert(0, 10, 1))
		require.NoError(t, ivs.insert(10, 20, 2))
		require.NoError(t, ivs.insert(30, 40, 4))
		require.NoError(t, ivs.insert(20, 30, 3)) // fills the hole: all one range
		assert.Equal(t, intervals{{off: 0, end: 40, firstSeq: 1, lastSeq: 4}}, ivs)
		assert.NoError(t, ivs.check())
	})
	t.Run("overlap", func(t *testing.T) {
		var ivs intervals
		require.NoError(t, ivs.insert(10, 20, 1))
		assert.ErrorIs(t, ivs.insert(15, 25, 2), ErrOverlap)
		assert.ErrorIs(t, ivs.insert(5, 11, 3), ErrOverlap)
		assert.ErrorIs(t, ivs.insert(10, 20, 4), ErrOverlap)
		assert.NoError(t, ivs.insert(20, 25, 5))
	})
	t.Run("gap at the start and in the middle", func(t *testing.T) {
		var ivs intervals
		require.NoError(t, ivs.insert(5, 10, 1))
		err := ivs.check()
		require.ErrorIs(t, err, ErrGap)
		assert.Contains(t, err.Error(), "bytes [0, 5) never written")
		require.NoError(t, ivs.insert(0, 5, 0))
		require.NoError(t, ivs.insert(12, 20, 2))
		err = ivs.check()
		require.ErrorIs(t, err, ErrGap)
		assert.Contains(t, err.Error(), "bytes [10, 12) never written")
	})
	t.Run("adjacent but out of stream order", func(t *testing.T) {
		// mbstream writes at the running offset: the chunk for [10, 20)
		// coming before the one for [0, 10) fails there.
		var ivs intervals
		require.NoError(t, ivs.insert(10, 20, 1))
		require.NoError(t, ivs.insert(0, 10, 2))
		assert.Len(t, ivs, 2, "not merged")
		assert.ErrorIs(t, ivs.check(), ErrOutOfOrder)
	})
	t.Run("empty file", func(t *testing.T) {
		var ivs intervals
		assert.NoError(t, ivs.check())
	})
}
