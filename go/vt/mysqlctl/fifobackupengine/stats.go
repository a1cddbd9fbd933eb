package fifobackupengine

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
)

// phaseStats reports every operation to Vitess's backupstats (so the
// BackupBytes/BackupDurationNanoseconds families carry the engine's phases
// beside the builtin engine's) and keeps totals for the summary table that
// ends every backup and restore.
type phaseStats struct {
	stats backupstats.Stats

	mu     sync.Mutex
	ops    map[string]*opTotal
	order  []string
	scopes map[string]backupstats.Stats
}

type opTotal struct {
	bytes int64
	busy  time.Duration
	count int64
}

func newPhaseStats(s backupstats.Stats) *phaseStats {
	if s == nil {
		s = backupstats.NoStats()
	}
	return &phaseStats{stats: s, ops: map[string]*opTotal{}, scopes: map[string]backupstats.Stats{}}
}

func (p *phaseStats) scope(op string) (backupstats.Stats, *opTotal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.scopes[op]
	if !ok {
		s = p.stats.Scope(backupstats.Operation(op))
		p.scopes[op] = s
		p.ops[op] = &opTotal{}
		p.order = append(p.order, op)
	}
	return s, p.ops[op]
}

// bytesFunc returns a metering callback for op, for the go/ioutil wrappers.
func (p *phaseStats) bytesFunc(op string) func(int, time.Duration) {
	s, t := p.scope(op)
	return func(n int, d time.Duration) {
		s.TimedIncrementBytes(n, d)
		p.mu.Lock()
		t.bytes += int64(n)
		t.busy += d
		t.count++
		p.mu.Unlock()
	}
}

// timed records one occurrence of op that took d.
func (p *phaseStats) timed(op string, d time.Duration) {
	s, t := p.scope(op)
	s.TimedIncrement(d)
	p.mu.Lock()
	t.busy += d
	t.count++
	p.mu.Unlock()
}

// since records op as taking the time since start.
func (p *phaseStats) since(op string, start time.Time) { p.timed(op, time.Since(start)) }

// Table renders the totals: one row per operation. Seconds are busy time
// summed over lanes, so an operation whose MiB/s is lowest relative to the
// others is the bottleneck.
func (p *phaseStats) Table(title string, wall time.Duration) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s (wall %.1fs)\n", title, wall.Seconds())
	fmt.Fprintf(&b, "%-12s %-20s %10s %10s %10s\n", "PHASE", "OPERATION", "GiB", "SECONDS", "MiB/s")
	for _, op := range p.order {
		t := p.ops[op]
		phase, _, _ := strings.Cut(op, ":")
		rate := "-"
		if t.bytes > 0 && t.busy > 0 {
			rate = fmt.Sprintf("%.1f", float64(t.bytes)/(1<<20)/t.busy.Seconds())
		}
		fmt.Fprintf(&b, "%-12s %-20s %10.3f %10.2f %10s\n", phase, op, float64(t.bytes)/(1<<30), t.busy.Seconds(), rate)
	}
	return b.String()
}
