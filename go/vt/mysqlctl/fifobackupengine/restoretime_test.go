package fifobackupengine

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mib = 1 << 20

// sample is a restore timed exactly at these rates: 200 MiB/s download,
// 0.5 s per prepare, 50 MiB/s of redo, 2 s to start.
func sample(stream, redo int64, prepares int) RestoreSample {
	return RestoreSample{
		Work:     RestoreWork{StreamBytes: stream, RedoBytes: redo, RedoKnown: true, Prepares: prepares},
		Download: float64(stream) / (200 * mib),
		Prepare:  0.5*float64(prepares) + float64(redo)/(50*mib),
		Start:    2,
	}
}

func TestFitRestoreRatesFindsTheRatesOfItsSamples(t *testing.T) {
	r, ok := FitRestoreRates([]RestoreSample{sample(1024*mib, 10*mib, 1), sample(4096*mib, 900*mib, 1), sample(2048*mib, 300*mib, 3)})
	require.True(t, ok)
	assert.Equal(t, 3, r.Samples)
	assert.InDelta(t, 200*mib, r.DownloadBytesPerSecond, 1)
	assert.InDelta(t, 0.5, r.SecondsPerPrepare, 1e-9)
	assert.InDelta(t, 50*mib, r.RedoBytesPerSecond, 1)
	assert.False(t, r.RedoRateAssumed)
	assert.InDelta(t, 2, r.StartSeconds, 1e-9)

	p := r.Predict(RestoreWork{StreamBytes: 8192 * mib, RedoBytes: 500 * mib, RedoKnown: true, Prepares: 7})
	assert.Equal(t, 40960*time.Millisecond, p.Download)
	assert.Equal(t, 13500*time.Millisecond, p.Prepare)
	assert.Equal(t, 2*time.Second, p.Start)
	assert.Zero(t, p.High, "the samples agree: a point")
	assert.True(t, p.Beyond, "8 GiB: larger than the 4 GiB it learned from")
	assert.Equal(t, "56s (download 41s, prepare 13.5s, start 2s); larger than any restore it learned from: expect more", p.String())
	within := r.Predict(RestoreWork{StreamBytes: 2048 * mib, RedoBytes: 100 * mib, RedoKnown: true, Prepares: 1})
	assert.False(t, within.Beyond)
	assert.Equal(t, "15s (download 10.2s, prepare 2.5s, start 2s)", within.String())
}

// Samples that disagree give a range: each phase at the fastest and the
// slowest of them.
func TestPredictionIsARangeWhereItsSamplesDisagree(t *testing.T) {
	fast, slow := sample(1024*mib, 10*mib, 1), sample(1024*mib, 10*mib, 1)
	fast.Download, slow.Download = 4, 8 // the same work at 256 and 128 MiB/s
	slow.Start = 6
	r, ok := FitRestoreRates([]RestoreSample{fast, slow})
	require.True(t, ok)
	assert.InDelta(t, 0.75, r.Spread.DownloadLow, 1e-6, "the fit is the median rate, 192 MiB/s: 1024 MiB in 5.33 s")
	assert.InDelta(t, 1.5, r.Spread.DownloadHigh, 1e-6)
	assert.Equal(t, 2.0, r.Spread.StartLow)
	assert.Equal(t, 6.0, r.Spread.StartHigh)
	p := r.Predict(RestoreWork{StreamBytes: 1024 * mib, RedoBytes: 10 * mib, RedoKnown: true, Prepares: 1})
	assert.False(t, p.Beyond)
	assert.InDelta(t, 16.0/3, p.Download.Seconds(), 1e-6)
	assert.InDelta(t, (4 + p.Prepare.Seconds() + 2), p.Low.Seconds(), 0.01, "fastest download, fastest start")
	assert.InDelta(t, (8 + p.Prepare.Seconds() + 6), p.High.Seconds(), 0.01, "slowest download, slowest start")
	assert.Regexp(t, `; 7s to 15s by the restores it learned from$`, p.String())
}

// Samples whose redo per prepare is alike cannot tell the redo rate from
// the prepare's fixed cost: the default rate is taken, and said.
func TestFitRestoreRatesAssumesTheRedoRateItCannotSee(t *testing.T) {
	r, ok := FitRestoreRates([]RestoreSample{sample(1024*mib, 10*mib, 1), sample(1024*mib, 12*mib, 1)})
	require.True(t, ok)
	assert.True(t, r.RedoRateAssumed)
	assert.Equal(t, float64(DefaultRedoBytesPerSecond), r.RedoBytesPerSecond)
	// 0.5 s + 11 MiB at 50 MiB/s, less 11 MiB at the default 64 MiB/s.
	assert.InDelta(t, 0.5+11.0/50-11.0/64, r.SecondsPerPrepare, 1e-6)
}

// A fit that would need a negative coefficient keeps it at 0.
func TestFitRestoreRatesNeverGoesNegative(t *testing.T) {
	s1, s2 := sample(1024*mib, 0, 1), sample(1024*mib, 400*mib, 1)
	s1.Prepare, s2.Prepare = 3, 2 // more redo, less time: noise
	r, ok := FitRestoreRates([]RestoreSample{s1, s2})
	require.True(t, ok)
	assert.GreaterOrEqual(t, r.SecondsPerPrepare, 0.0)
	assert.GreaterOrEqual(t, r.RedoBytesPerSecond, 0.0)
	p := r.Predict(RestoreWork{StreamBytes: mib, RedoBytes: 100 * mib, Prepares: 1})
	assert.GreaterOrEqual(t, p.Prepare, time.Duration(0))
}

func TestFitRestoreRatesNeedsATimedRestore(t *testing.T) {
	_, ok := FitRestoreRates(nil)
	assert.False(t, ok)
	_, ok = FitRestoreRates([]RestoreSample{{Work: RestoreWork{StreamBytes: mib, Prepares: 1}}})
	assert.False(t, ok, "no phases")
	r, ok := FitRestoreRates([]RestoreSample{{Work: RestoreWork{StreamBytes: mib, Prepares: 1}, Download: 1, Prepare: 1}})
	require.True(t, ok, "a sample without a start still gives the rest")
	assert.Zero(t, r.StartSeconds)
}

func TestWorkOfAChain(t *testing.T) {
	m := func(raw, to, last int64) *Manifest {
		x := &Manifest{RawBytes: raw}
		x.LSN.To, x.LSN.Last = strconv.FormatInt(to, 10), strconv.FormatInt(last, 10)
		return x
	}
	w := WorkOf([]*Manifest{m(1000, 50, 80), m(100, 90, 95)})
	assert.Equal(t, RestoreWork{StreamBytes: 1100, RedoBytes: 35, RedoKnown: true, Prepares: 2}, w)
	old := &Manifest{RawBytes: 10} // taken before LSNs were recorded
	w = WorkOf([]*Manifest{old, m(100, 90, 95)})
	assert.Equal(t, RestoreWork{StreamBytes: 110, RedoBytes: 5, RedoKnown: false, Prepares: 2}, w)
	assert.Contains(t, RestoreRates{}.Predict(w).String(), "redo not recorded")
}
