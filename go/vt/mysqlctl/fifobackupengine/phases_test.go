package fifobackupengine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPhaseTimesEachUntilTheNext: a phase lasts until the next begins, the
// last until Done; a phase begun again goes on; Done twice changes nothing.
func TestPhaseTimesEachUntilTheNext(t *testing.T) {
	var p PhaseTimes
	p.Begin(PhaseDownload)
	time.Sleep(20 * time.Millisecond)
	p.Begin(PhaseDownload)
	time.Sleep(20 * time.Millisecond)
	p.Begin(PhasePrepare)
	time.Sleep(10 * time.Millisecond)
	got := p.Done()
	require.Len(t, got, 2)
	assert.Equal(t, PhaseDownload, got[0].Phase)
	assert.GreaterOrEqual(t, got[0].Seconds, 0.04)
	assert.Equal(t, PhasePrepare, got[1].Phase)
	assert.GreaterOrEqual(t, got[1].Seconds, 0.01)
	assert.Equal(t, got, p.Done())
}
