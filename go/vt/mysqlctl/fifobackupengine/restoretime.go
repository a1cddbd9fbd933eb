package fifobackupengine

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// A restore's time, predicted before it is needed: from what restoring a
// backup has to do (its chain's MANIFESTs) and the rates that timed
// restores of other backups achieved (test restores record theirs). The
// model is deliberately small, so that an operator can check it by hand:
//
//	download = stream bytes / download rate
//	prepare  = prepares x seconds per prepare + redo bytes / redo rate
//	start    = mysqld's start, as the test restores took it
//
// Download covers reading, decompressing and writing the files, which
// overlap. A replica's catch-up after the start is not in it: it depends on
// the writes since the backup, not on the backup.

// RestoreWork is what restoring a backup takes.
type RestoreWork struct {
	// StreamBytes are the tool's streams of the chain, before compression.
	StreamBytes int64 `json:"stream_bytes"`
	// RedoBytes is the redo the prepares apply (last_lsn - to_lsn, summed
	// over the chain); RedoKnown is false when a backup of the chain did
	// not record its LSNs (then RedoBytes counts only those that did).
	RedoBytes int64 `json:"redo_bytes"`
	RedoKnown bool  `json:"redo_known"`
	// Prepares is one per backup of the chain.
	Prepares int `json:"prepares"`
}

// WorkOf is the work of restoring chain, full first.
func WorkOf(chain []*Manifest) RestoreWork {
	w := RestoreWork{RedoKnown: true, Prepares: len(chain)}
	for _, m := range chain {
		w.StreamBytes += m.RawBytes
		redo, ok := m.LSN.Redo()
		w.RedoBytes += redo
		w.RedoKnown = w.RedoKnown && ok
	}
	return w
}

// RestoreSample is one timed restore: its work and its phases' seconds.
type RestoreSample struct {
	Work                     RestoreWork
	Download, Prepare, Start float64
}

// DefaultRedoBytesPerSecond is the redo rate assumed when the samples do
// not tell it (their redo per prepare too alike to separate it from the
// prepare's fixed cost): the slowest mariabackup applied on 2 cores
// (docs/benchmarks/prepare-memory.md, restore-time.md), so that a guess
// errs long.
const DefaultRedoBytesPerSecond = 64 << 20

// redoSpread is how far apart the samples' redo per prepare must be for
// the redo rate to be fitted rather than assumed.
const redoSpread = 64 << 20

// RestoreRates are the rates a host class's timed restores achieved.
type RestoreRates struct {
	Samples                int     `json:"samples"`
	DownloadBytesPerSecond float64 `json:"download_bytes_per_second"`
	SecondsPerPrepare      float64 `json:"seconds_per_prepare"`
	RedoBytesPerSecond     float64 `json:"redo_bytes_per_second"`
	// RedoRateAssumed: the samples did not tell the redo rate, which is
	// DefaultRedoBytesPerSecond.
	RedoRateAssumed bool `json:"redo_rate_assumed,omitempty"`
	// StartSeconds is mysqld's start (0 where no sample timed one).
	StartSeconds float64 `json:"start_seconds"`
	// Spread is how far the samples disagree, and how large they were.
	Spread RestoreSpread `json:"spread"`
}

// RestoreSpread is the spread of the samples a prediction learned from:
// the slowest and fastest of each phase, as a factor of the fitted time
// (1 when they agree), and the largest work among them.
type RestoreSpread struct {
	DownloadLow        float64 `json:"download_low_factor"`
	DownloadHigh       float64 `json:"download_high_factor"`
	PrepareLow         float64 `json:"prepare_low_factor"`
	PrepareHigh        float64 `json:"prepare_high_factor"`
	StartLow           float64 `json:"start_low_seconds"`
	StartHigh          float64 `json:"start_high_seconds"`
	LargestStreamBytes int64   `json:"largest_stream_bytes"`
	LargestRedoBytes   int64   `json:"largest_redo_bytes"`
}

// FitRestoreRates finds the rates of samples (their medians, and for the
// prepare a least-squares fit); ok is false when no sample has a download
// and a prepare to learn from.
func FitRestoreRates(samples []RestoreSample) (RestoreRates, bool) {
	var usable []RestoreSample
	var download, start []float64
	for _, s := range samples {
		if s.Work.StreamBytes <= 0 || s.Download <= 0 || s.Prepare <= 0 || s.Work.Prepares < 1 {
			continue
		}
		usable = append(usable, s)
		download = append(download, float64(s.Work.StreamBytes)/s.Download)
		if s.Start > 0 {
			start = append(start, s.Start)
		}
	}
	if len(usable) == 0 {
		return RestoreRates{}, false
	}
	r := RestoreRates{Samples: len(usable), DownloadBytesPerSecond: median(download), StartSeconds: median(start)}
	r.SecondsPerPrepare, r.RedoBytesPerSecond, r.RedoRateAssumed = fitPrepare(usable)
	r.Spread = r.spreadOf(usable, start)
	return r, true
}

// spreadOf is how far samples are from r's fit, phase by phase.
func (r RestoreRates) spreadOf(samples []RestoreSample, starts []float64) RestoreSpread {
	sp := RestoreSpread{DownloadLow: 1, DownloadHigh: 1, PrepareLow: 1, PrepareHigh: 1, StartLow: r.StartSeconds, StartHigh: r.StartSeconds}
	widen := func(lo, hi *float64, f float64) { *lo, *hi = min(*lo, f), max(*hi, f) }
	for _, s := range samples {
		fit := r.Predict(s.Work)
		if d := fit.Download.Seconds(); d > 0 {
			widen(&sp.DownloadLow, &sp.DownloadHigh, s.Download/d)
		}
		if p := fit.Prepare.Seconds(); p > 0 {
			widen(&sp.PrepareLow, &sp.PrepareHigh, s.Prepare/p)
		}
		sp.LargestStreamBytes = max(sp.LargestStreamBytes, s.Work.StreamBytes)
		sp.LargestRedoBytes = max(sp.LargestRedoBytes, s.Work.RedoBytes)
	}
	for _, st := range starts {
		widen(&sp.StartLow, &sp.StartHigh, st)
	}
	return sp
}

// fitPrepare fits prepare = perPrepare x prepares + redo / redoRate to the
// samples with both coefficients at least 0; where their redo per prepare
// is too alike, it takes the default redo rate and the median of the rest.
func fitPrepare(samples []RestoreSample) (perPrepare, redoRate float64, assumed bool) {
	var lo, hi float64 = math.Inf(1), math.Inf(-1)
	for _, s := range samples {
		perPrep := float64(s.Work.RedoBytes) / float64(s.Work.Prepares)
		lo, hi = min(lo, perPrep), max(hi, perPrep)
	}
	if hi-lo >= redoSpread {
		if a, b, ok := leastSquares(samples); ok && b > 0 {
			return a, 1 / b, false
		}
	}
	rest := make([]float64, len(samples))
	for i, s := range samples {
		rest[i] = max(0, s.Prepare-float64(s.Work.RedoBytes)/DefaultRedoBytesPerSecond) / float64(s.Work.Prepares)
	}
	return median(rest), DefaultRedoBytesPerSecond, true
}

// leastSquares fits prepare = a x prepares + b x redo, a, b >= 0.
func leastSquares(samples []RestoreSample) (a, b float64, ok bool) {
	var spp, spr, srr, spy, sry float64
	for _, s := range samples {
		p, r := float64(s.Work.Prepares), float64(s.Work.RedoBytes)
		spp, spr, srr, spy, sry = spp+p*p, spr+p*r, srr+r*r, spy+p*s.Prepare, sry+r*s.Prepare
	}
	det := spp*srr - spr*spr
	if det <= 1e-9*spp*srr {
		return 0, 0, false
	}
	a, b = (spy*srr-spr*sry)/det, (spp*sry-spr*spy)/det
	switch {
	case a < 0:
		return 0, sry / srr, true
	case b < 0:
		return spy / spp, 0, true
	}
	return a, b, true
}

// PredictedRestore is a restore's time, predicted by phase.
type PredictedRestore struct {
	Download time.Duration `json:"download"`
	Prepare  time.Duration `json:"prepare"`
	Start    time.Duration `json:"start"`
	// RedoUnknown: a backup of the chain did not record its redo, whose
	// apply is left out.
	RedoUnknown bool `json:"redo_unknown,omitempty"`
	// Low and High bound it where the restores it learned from disagree
	// by more than a tenth (each phase at the fastest and slowest of them);
	// zero where they agree.
	Low  time.Duration `json:"low,omitempty"`
	High time.Duration `json:"high,omitempty"`
	// Beyond: the backup's stream or redo is larger than any restore it
	// learned from did: small restores run faster than a large one will
	// (the page cache, the buffer pool hold them), so expect more.
	Beyond bool `json:"beyond_samples,omitempty"`
}

// Total is the three phases together.
func (p PredictedRestore) Total() time.Duration { return p.Download + p.Prepare + p.Start }

// Predict is how long restoring w should take at r's rates.
func (r RestoreRates) Predict(w RestoreWork) PredictedRestore {
	seconds := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	p := PredictedRestore{Start: seconds(r.StartSeconds), RedoUnknown: !w.RedoKnown}
	if r.DownloadBytesPerSecond > 0 {
		p.Download = seconds(float64(w.StreamBytes) / r.DownloadBytesPerSecond)
	}
	prepare := r.SecondsPerPrepare * float64(w.Prepares)
	if r.RedoBytesPerSecond > 0 {
		prepare += float64(w.RedoBytes) / r.RedoBytesPerSecond
	}
	p.Prepare = seconds(prepare)
	sp := r.Spread
	if sp.LargestStreamBytes == 0 {
		return p // rates without samples behind them (a hand-made fit)
	}
	p.Beyond = w.StreamBytes > sp.LargestStreamBytes || w.RedoBytes > max(sp.LargestRedoBytes, redoSpread)
	low := seconds(p.Download.Seconds()*sp.DownloadLow + p.Prepare.Seconds()*sp.PrepareLow + sp.StartLow)
	high := seconds(p.Download.Seconds()*sp.DownloadHigh + p.Prepare.Seconds()*sp.PrepareHigh + sp.StartHigh)
	if total := p.Total(); high-low > total/10 {
		p.Low, p.High = low, high
	}
	return p
}

// String is "1m5s (download 40s, prepare 20s, start 5s)".
func (p PredictedRestore) String() string {
	s := fmt.Sprintf("%v (download %v, prepare %v, start %v)", p.Total().Round(time.Second), p.Download.Round(100*time.Millisecond),
		p.Prepare.Round(100*time.Millisecond), p.Start.Round(100*time.Millisecond))
	if p.RedoUnknown {
		s += ", redo not recorded"
	}
	if p.High > 0 {
		s += fmt.Sprintf("; %v to %v by the restores it learned from", p.Low.Round(time.Second), p.High.Round(time.Second))
	}
	if p.Beyond {
		s += "; larger than any restore it learned from: expect more"
	}
	return s
}

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
