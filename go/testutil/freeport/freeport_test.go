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

	mine := block
	next := mine.last + 1
	other, err := os.OpenFile(filepath.Join(os.TempDir(), "vtfifo-test-ports", strconv.Itoa(next)), os.O_CREATE|os.O_RDWR, 0o666)
	require.NoError(t, err)
	defer other.Close()
	if syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		t.Skipf("the block after ours (%d) is held by another test process already", next)
	}
	b, err := claimBlock(mine)
	require.NoError(t, err)
	assert.Greater(t, b.next, next, "the block another process holds is skipped")
}
