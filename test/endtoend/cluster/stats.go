package cluster

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// StatKey is one label set of a backupstats metric: Component, Implementation, Operation.
type StatKey struct {
	Component, Implementation, Operation string
}

// Stat is the bytes, count and duration recorded for one label set.
type Stat struct {
	StatKey
	Bytes    int64
	Count    int64
	Duration time.Duration
}

// BackupStats extracts the Backup* (prefix "Backup") or Restore* (prefix "Restore") metric
// families from /debug/vars: <prefix>Bytes, <prefix>Count, <prefix>DurationNanoseconds, each
// keyed "Component.Implementation.Operation".
func BackupStats(vars map[string]json.RawMessage, prefix string) ([]Stat, error) {
	byKey := map[StatKey]*Stat{}
	get := func(k StatKey) *Stat {
		s, ok := byKey[k]
		if !ok {
			s = &Stat{StatKey: k}
			byKey[k] = s
		}
		return s
	}
	for _, fam := range []string{"Bytes", "Count", "DurationNanoseconds"} {
		raw, ok := vars[prefix+fam]
		if !ok {
			continue
		}
		m := map[string]int64{}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s%s: %w", prefix, fam, err)
		}
		for key, v := range m {
			parts := strings.SplitN(key, ".", 3)
			for len(parts) < 3 {
				parts = append(parts, "")
			}
			s := get(StatKey{parts[0], parts[1], parts[2]})
			switch fam {
			case "Bytes":
				s.Bytes = v
			case "Count":
				s.Count = v
			case "DurationNanoseconds":
				s.Duration = time.Duration(v)
			}
		}
	}
	out := make([]Stat, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].StatKey, out[j].StatKey
		if a.Component != b.Component {
			return a.Component < b.Component
		}
		if a.Implementation != b.Implementation {
			return a.Implementation < b.Implementation
		}
		return a.Operation < b.Operation
	})
	return out, nil
}

// FormatStats renders stats as a per-phase table with throughput.
func FormatStats(title string, stats []Stat) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", title)
	fmt.Fprintf(&b, "%-14s %-14s %-22s %12s %7s %11s %11s\n", "component", "implementation", "operation", "bytes", "count", "duration", "MiB/s")
	fmt.Fprintf(&b, "%s\n", strings.Repeat("-", 97))
	for _, s := range stats {
		rate := "-"
		if s.Bytes > 0 && s.Duration > 0 {
			rate = fmt.Sprintf("%.1f", float64(s.Bytes)/(1<<20)/s.Duration.Seconds())
		}
		fmt.Fprintf(&b, "%-14s %-14s %-22s %12d %7d %11s %11s\n", s.Component, s.Implementation, s.Operation, s.Bytes, s.Count,
			s.Duration.Round(time.Millisecond), rate)
	}
	return b.String()
}
