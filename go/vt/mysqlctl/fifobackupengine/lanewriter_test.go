package fifobackupengine

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"vitess.io/vitess/go/vt/logutil"
)

// barrierFile is a lane file whose Close returns once every lane file of
// its barrier is being closed, or fails after a while: closes made one
// after another never meet.
type barrierFile struct {
	b   *closeBarrier
	err error
}

type closeBarrier struct {
	mu      sync.Mutex
	waiting int
	all     chan struct{}
	lanes   int
}

func (f *barrierFile) Write(p []byte) (int, error) { return len(p), nil }

func (f *barrierFile) Close() error {
	b := f.b
	b.mu.Lock()
	b.waiting++
	if b.waiting == b.lanes {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-time.After(5 * time.Second):
		return errors.New("the other lanes were not closed meanwhile")
	}
	return f.err
}

// TestLanesCloseAtOnce: a lane file's close stores its last part and its
// index; the lanes close at once, not one after another, and a lane whose
// close failed is named while the others still close.
func TestLanesCloseAtOnce(t *testing.T) {
	const lanes = 8
	b := &backupRun{stats: newPhaseStats(nil), logger: logutil.NewMemoryLogger()}
	barrier := &closeBarrier{all: make(chan struct{}), lanes: lanes}
	for i := range lanes {
		f := &barrierFile{b: barrier}
		if i == 5 {
			f.err = errors.New("part 1: upload: access denied")
		}
		b.lanes = append(b.lanes, &laneWriter{index: i, name: fmt.Sprintf("lane-%03d.xbstream.zst", i), file: f})
	}
	err := b.closeLanes()
	assert.EqualError(t, err, "lane 5 (lane-005.xbstream.zst): closing the file in storage: part 1: upload: access denied")
	for _, l := range b.lanes {
		assert.True(t, l.closed, "lane %d", l.index)
	}
	assert.NoError(t, b.closeLanes(), "closed lanes are not closed again")
}
