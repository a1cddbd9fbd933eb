package freeport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPortsAreFreeDistinctAndOwnBlock: ports come from below the ephemeral
// range, are free when handed out and never handed out twice; a block
// another process holds (its lock file locked) is skipped.
func TestPortsAreFreeDistinctAndOwnBlock(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		p, err := Get()
		require.NoError(t, err)
		assert.False(t, seen[p], "port %d twice", p)
		seen[p] = true
		assert.Less(t, p, ephemeralLow())
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		require.NoError(t, err, "port %d is free", p)
		l.Close()
	}

	// Another process's block: the first free one after ours, locked here
	// through a file of its own (flock locks belong to the open file).
	mine := block
	var other *os.File
	taken := mine.last + 1
	for ; other == nil; taken += blockSize {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "vtfifo-test-ports", strconv.Itoa(taken)), os.O_CREATE|os.O_RDWR, 0o666)
		require.NoError(t, err)
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			other = f
			break
		}
		f.Close()
	}
	defer other.Close()
	b, err := claimBlock(&portBlock{last: taken - 1})
	require.NoError(t, err)
	assert.Greater(t, b.next, taken, "the block another process holds is skipped")
}
