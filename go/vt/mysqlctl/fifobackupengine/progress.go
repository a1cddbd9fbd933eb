package fifobackupengine

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl"
)

// progress logs bytes done, rate and ETA every interval until stopped.
func (b *backupRun) progress(ctx context.Context) (stop func()) {
	estimate := dataSize(b.params.Cnf)
	return logProgress(ctx, b.cfg.Progress, func(elapsed time.Duration) {
		var raw, stored int64
		for _, l := range b.lanes {
			raw += l.raw.Load()
			stored += l.stored.Load()
		}
		b.logger.Infof("fifo backup: %s", progressLine(raw, stored, estimate, elapsed))
	})
}

// logProgress calls log every interval (0: never) with the time since it
// started, until the returned stop is called or ctx ends; stop returns once
// its goroutine has.
func logProgress(ctx context.Context, every time.Duration, log func(elapsed time.Duration)) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				log(time.Since(start))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func progressLine(raw, stored, estimate int64, elapsed time.Duration) string {
	rate := float64(raw) / elapsed.Seconds()
	line := fmt.Sprintf("%.2f GiB read, %.2f GiB stored, %.1f MiB/s", float64(raw)/(1<<30), float64(stored)/(1<<30), rate/(1<<20))
	if estimate > 0 && rate > 0 {
		pct := 100 * float64(raw) / float64(estimate)
		eta := time.Duration(float64(max(estimate-raw, 0))/rate) * time.Second
		line += fmt.Sprintf(", %.0f%% of ~%.2f GiB, ETA %v", min(pct, 100), float64(estimate)/(1<<30), eta.Round(time.Second))
	}
	return line
}

// dataSize estimates the stream size from the server's data directories.
func dataSize(cnf *mysqlctl.Mycnf) int64 {
	var total int64
	seen := map[string]bool{}
	for _, dir := range []string{cnf.DataDir, cnf.InnodbDataHomeDir, cnf.InnodbLogGroupHomeDir} {
		if dir == "" || seen[dir] {
			continue
		}
		seen[dir] = true
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					total += info.Size()
				}
			}
			return nil
		})
	}
	return total
}
