package vtfifocli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dustin/go-humanize"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// Predicted restore times: ls, show and the fleet view print, for each
// backup, how long restoring it should take on a host like the one that ran
// the latest test restores (fifobackupengine.RestoreRates).

// describeShard describes every complete backup of the shard, each with its
// predicted restore time where the shard's test restores tell the rates.
func (s *session) describeShard() ([]BackupInfo, fifobackupengine.RestoreRates, bool, error) {
	bhs, err := s.bs.ListBackups(s.ctx, s.o.dir())
	if err != nil {
		return nil, fifobackupengine.RestoreRates{}, false, err
	}
	infos, rates, ok := s.describeBackups(bhs)
	return infos, rates, ok, nil
}

// describeBackups describes bhs, a shard's complete backups, each with its
// predicted restore time where their test restores tell the rates.
func (s *session) describeBackups(bhs []backupstorage.BackupHandle) ([]BackupInfo, fifobackupengine.RestoreRates, bool) {
	infos := make([]BackupInfo, 0, len(bhs))
	for _, bh := range bhs {
		info := describe(s.ctx, bh)
		info.Storage = s.origin(bh)
		infos = append(infos, info)
	}
	rates, ok := testrestore.Rates(records(infos))
	if ok {
		predictRestores(infos, rates)
	}
	return infos, rates, ok
}

// chainWork is the work of restoring infos[name], its chain read from
// infos (one shard's backups by name); ok is false when a backup of the
// chain is missing or not this engine's.
func chainWork(infos map[string]*BackupInfo, name string) (fifobackupengine.RestoreWork, bool) {
	b := infos[name]
	if b == nil || b.manifest == nil || b.manifest.ChainLength >= len(infos) {
		return fifobackupengine.RestoreWork{}, false
	}
	chain := make([]*fifobackupengine.Manifest, b.manifest.ChainLength+1)
	for i := len(chain) - 1; i >= 0; i-- {
		// Each base is one place nearer the full: a chain that says
		// otherwise is not followed.
		if b == nil || b.manifest == nil || b.manifest.ChainLength != i {
			return fifobackupengine.RestoreWork{}, false
		}
		chain[i] = b.manifest
		b = infos[b.Base]
	}
	return fifobackupengine.WorkOf(chain), true
}

// records are the test restore records among infos.
func records(infos []BackupInfo) []testrestore.Record {
	var recs []testrestore.Record
	for _, b := range infos {
		if b.Verification != nil {
			recs = append(recs, *b.Verification)
		}
	}
	return recs
}

// predictRestores sets the predicted restore of each fifo backup of infos
// (one shard's) at rates.
func predictRestores(infos []BackupInfo, rates fifobackupengine.RestoreRates) {
	byName := map[string]*BackupInfo{}
	for i := range infos {
		byName[infos[i].Name] = &infos[i]
	}
	for i := range infos {
		if w, ok := chainWork(byName, infos[i].Name); ok {
			p := rates.Predict(w)
			infos[i].PredictedRestore = &p
		}
	}
}

// ratesLine says where the predictions come from.
func ratesLine(r fifobackupengine.RestoreRates, ok bool) string {
	if !ok {
		return "not predicted: no passed test restore has recorded its work and phases yet (vtfifo test-restore records them)"
	}
	redo := humanize.IBytes(uint64(r.RedoBytesPerSecond)) + "/s of redo"
	if r.RedoRateAssumed {
		redo += " (assumed: their redo was too alike to tell)"
	}
	return fmt.Sprintf("predicted from the %d latest passed test restores: download %s/s, %.1fs per prepare + %s, start %.1fs; "+
		"a replica's catch-up comes on top", r.Samples, humanize.IBytes(uint64(r.DownloadBytesPerSecond)), r.SecondsPerPrepare, redo, r.StartSeconds)
}

// predicted is the table's cell for p: "~3m10s", a range "2m-4m30s" where
// the restores it learned from disagree, "?" after it for a backup larger
// than any of them, or "-".
func predicted(p *fifobackupengine.PredictedRestore) string {
	if p == nil {
		return "-"
	}
	s := "~" + shortDuration(p.Total())
	if p.High > 0 {
		s = shortDuration(p.Low) + "-" + shortDuration(p.High)
	}
	if p.RedoUnknown {
		s += "+redo"
	}
	if p.Beyond {
		s += "?"
	}
	return s
}

// predictRestore adds to rep the predicted restore time of the backup
// name, from its shard's test restores; a shard that cannot be listed
// leaves the backup's description as it is, saying why.
func (s *session) predictRestore(rep *ShowReport, name string) {
	infos, rates, ok, err := s.describeShard()
	switch {
	case err != nil:
		rep.restoreTimes = "not predicted: cannot list the shard's backups: " + errtext.Line(err)
		return
	case !ok:
		rep.restoreTimes = ratesLine(rates, ok)
		return
	}
	rep.RestoreRates = &rates
	rep.restoreTimes = "not predicted: its chain is not complete in the shard"
	for _, b := range infos {
		if b.Name == name && b.PredictedRestore != nil {
			rep.PredictedRestore = b.PredictedRestore
			rep.restoreTimes = "about " + b.PredictedRestore.String() + "; " + ratesLine(rates, ok)
		}
	}
}

// chainWorkIn is the work of restoring newest, one of bhs (a shard's
// backups), reading the MANIFESTs of its chain; nil where it cannot be told.
func chainWorkIn(ctx context.Context, bhs []backupstorage.BackupHandle, newest BackupInfo) *fifobackupengine.RestoreWork {
	byName := map[string]*BackupInfo{newest.Name: &newest}
	for base := newest.Base; base != ""; {
		i := slices.IndexFunc(bhs, func(bh backupstorage.BackupHandle) bool { return bh.Name() == base })
		if i < 0 || byName[base] != nil {
			return nil
		}
		b := describe(ctx, bhs[i])
		byName[base], base = &b, b.Base
	}
	w, ok := chainWork(byName, newest.Name)
	if !ok {
		return nil
	}
	return &w
}

// predictedRestore is the predicted restore time of the shard's backup
// name from its test restores so far; nil where they cannot tell.
func (s *session) predictedRestore(name string) *fifobackupengine.PredictedRestore {
	infos, _, ok, err := s.describeShard()
	if err != nil || !ok {
		return nil
	}
	for _, b := range infos {
		if b.Name == name {
			return b.PredictedRestore
		}
	}
	return nil
}

// predictionText is "; served in 5.6s, predicted 5.1s by the earlier test
// restores (10 % longer)" for a test restore they predicted, or "".
func predictionText(rec testrestore.Record) string {
	if rec.Predicted == nil {
		return ""
	}
	p, served := rec.Predicted.Total(), rec.Served()
	if p <= 0 || served <= 0 {
		return ""
	}
	diff, how := (served.Seconds()-p.Seconds())/p.Seconds()*100, "longer"
	if diff < 0 {
		diff, how = -diff, "shorter"
	}
	return fmt.Sprintf("; served in %v, predicted %v by the earlier test restores (%.0f %% %s)", served.Round(100*time.Millisecond),
		p.Round(100*time.Millisecond), diff, how)
}
