package fifobackupengine

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRedoIsLastLSNLessToLSNWhenBothAreKnown: the redo a prepare applies is last_lsn - to_lsn, known only
// when both are recorded.
func TestRedoIsLastLSNLessToLSNWhenBothAreKnown(t *testing.T) {
	n, ok := LSNs{To: "1000", Last: "5096"}.Redo()
	assert.True(t, ok)
	assert.Equal(t, int64(4096), n)
	for _, l := range []LSNs{{}, {To: "1000"}, {To: "x", Last: "2"}, {To: "9", Last: "2"}} {
		_, ok := l.Redo()
		assert.False(t, ok, "%+v", l)
	}
}
