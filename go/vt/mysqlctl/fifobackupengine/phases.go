package fifobackupengine

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// PhaseSeconds is how long one phase of a restore took.
type PhaseSeconds struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// PhaseTimes times the phases an OnPhase callback reports: each lasts until
// the next begins, the last until Done. Safe for concurrent use.
type PhaseTimes struct {
	mu     sync.Mutex
	phases []PhaseSeconds
	begun  time.Time
}

// Begin starts phase name, ending the one before (the same name again
// goes on with it).
func (p *PhaseTimes) Begin(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.phases); n > 0 && p.phases[n-1].Phase == name {
		return
	}
	p.end(time.Now())
	p.phases = append(p.phases, PhaseSeconds{Phase: name})
	p.begun = time.Now()
}

// Done ends the last phase and returns every phase in order.
func (p *PhaseTimes) Done() []PhaseSeconds {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end(time.Now())
	return append([]PhaseSeconds(nil), p.phases...)
}

func (p *PhaseTimes) end(now time.Time) {
	if n := len(p.phases); n > 0 && !p.begun.IsZero() {
		p.phases[n-1].Seconds = now.Sub(p.begun).Seconds()
		p.begun = time.Time{}
	}
}

// FormatPhases is "download 3.2s, prepare 0.4s".
func FormatPhases(phases []PhaseSeconds) string {
	parts := make([]string, len(phases))
	for i, p := range phases {
		parts[i] = fmt.Sprintf("%s %.1fs", p.Phase, p.Seconds)
	}
	return strings.Join(parts, ", ")
}
