package fifobackupengine

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type blockingReader struct{ entered, release chan struct{} }

func (b *blockingReader) Read(p []byte) (int, error) {
	close(b.entered)
	<-b.release
	return 0, io.EOF
}

// TestLaneGuard: stop waits for a Read in flight, later Reads fail, and a
// Read that never returns makes stop give up (so nothing is closed under it).
func TestLaneGuard(t *testing.T) {
	br := &blockingReader{entered: make(chan struct{}), release: make(chan struct{})}
	g := &laneGuard{r: br}
	done := make(chan struct{})
	go func() { _, _ = g.Read(make([]byte, 1)); close(done) }()
	<-br.entered
	assert.False(t, g.stop(50*time.Millisecond), "stop must not return true while a Read is in flight")
	go func() { time.Sleep(50 * time.Millisecond); close(br.release) }()
	require.True(t, g.stop(5*time.Second))
	<-done
	_, err := g.Read(make([]byte, 1))
	require.ErrorIs(t, err, errLaneStopped)
}
