package vtfifocli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// progress shows how far a command that reads a whole backup is, and in
// which phase (download, prepare, start, check). On a terminal: a line with
// the phase and its time, a live bar per lane and one for the total, with
// bytes, rate and ETA (mpb), fitted to the terminal's width; log lines are
// printed above them (console), never over them. Otherwise
// (--progress=always): a plain line at each phase and every
// --progress-interval with the same numbers, for logs.
type progress struct {
	out     io.Writer
	what    string
	start   time.Time
	console *console // nil: nothing else writes on out

	bytes, parts, total atomic.Int64
	mu                  sync.Mutex
	lanes               []laneProgress // set once by setLanes
	phaseName           string
	phaseStart          time.Time

	bars     *mpb.Progress // terminal only
	phaseBar *mpb.Bar
	totalBar *mpb.Bar
	plain    bool // plain lines (not a terminal, --progress=always)
	done     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

type laneProgress struct {
	bytes atomic.Int64
	total int64
	bar   *mpb.Bar
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(o *options, out io.Writer, what string) *progress {
	p := &progress{out: out, what: what, start: time.Now(), done: make(chan struct{}), console: o.console}
	p.phaseStart = p.start
	tty := isTerminal(out)
	switch {
	case o.progress == "never" || (o.progress == "auto" && !tty):
	case tty:
		// mpb fits every line to the terminal's width (a bar's own width is
		// what the decorators leave).
		p.bars = mpb.New(mpb.WithOutput(out), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond))
		p.phaseBar = p.bars.New(0, mpb.SpinnerStyle(),
			mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return p.phaseLabel() })))
		if p.console != nil {
			p.console.above(p.bars)
		}
	default:
		p.plain = true
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(o.progressInterval)
			defer t.Stop()
			for {
				select {
				case <-p.done:
					return
				case <-t.C:
					fmt.Fprintln(p.out, p.line())
				}
			}
		}()
	}
	return p
}

// bar adds a bar named name of total bytes.
func (p *progress) bar(name string, total int64) *mpb.Bar {
	return p.bars.AddBar(total,
		mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR), decor.Counters(decor.SizeB1024(0), "% .1f / % .1f", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.AverageSpeed(decor.SizeB1024(0), "% .1f", decor.WCSyncSpace),
			decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace)))
}

// phase says that a phase of the command begins; a phase said again (each
// backup of an incremental chain is downloaded, then prepared) goes on.
func (p *progress) phase(name string) {
	p.mu.Lock()
	prev, took := p.phaseName, time.Since(p.phaseStart).Round(time.Second)
	if prev != name {
		p.phaseName, p.phaseStart = name, time.Now()
	}
	p.mu.Unlock()
	if prev == name || !p.plain {
		return
	}
	after := ""
	if prev != "" {
		after = fmt.Sprintf(" (%s took %v)", prev, took)
	}
	fmt.Fprintf(p.out, "%s: %s%s\n", p.what, name, after)
}

// phaseLabel is the terminal's first line: what, the phase and its time.
func (p *progress) phaseLabel() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.phaseName == "" {
		return p.what
	}
	return fmt.Sprintf("%s: %s %v", p.what, p.phaseName, time.Since(p.phaseStart).Round(time.Second))
}

// setTotal sets the bytes the command will read (without lanes: parts).
func (p *progress) setTotal(n int64) {
	p.total.Store(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bars != nil && p.totalBar == nil {
		p.totalBar = p.bar("total", n)
	}
}

// setLanes sets the total from the MANIFEST and a bar per lane.
func (p *progress) setLanes(m *fifobackupengine.Manifest) {
	p.mu.Lock()
	lanes := make([]laneProgress, len(m.Lanes))
	for i, l := range m.Lanes {
		lanes[i].total = l.StoredBytes
		if p.bars != nil {
			lanes[i].bar = p.bar(fmt.Sprintf("lane %d", i), l.StoredBytes)
		}
	}
	p.lanes = lanes
	p.mu.Unlock()
	p.setTotal(m.StoredBytes)
}

// addLane counts n stored bytes read from lane.
func (p *progress) addLane(lane, n int) {
	p.add(int64(n), 0)
	p.mu.Lock()
	var l *laneProgress
	if lane >= 0 && lane < len(p.lanes) {
		l = &p.lanes[lane]
	}
	p.mu.Unlock()
	if l != nil {
		l.bytes.Add(int64(n))
		if l.bar != nil {
			l.bar.IncrBy(n)
		}
	}
}

// add counts n bytes and parts read outside any lane.
func (p *progress) add(n int64, parts int64) {
	p.bytes.Add(n)
	p.parts.Add(parts)
	p.mu.Lock()
	b := p.totalBar
	p.mu.Unlock()
	if b != nil {
		b.IncrInt64(n)
	}
}

// line is the plain progress line.
func (p *progress) line() string {
	b := p.bytes.Load()
	el := time.Since(p.start)
	rate := 0.0
	if el > 0 {
		rate = float64(b) / el.Seconds()
	}
	var s strings.Builder
	fmt.Fprintf(&s, "%s: %s", p.what, humanize.IBytes(uint64(b)))
	if t := p.total.Load(); t > 0 {
		fmt.Fprintf(&s, " of %s (%.0f%%)", humanize.IBytes(uint64(t)), 100*float64(b)/float64(t))
		if rate > 0 && t > b {
			fmt.Fprintf(&s, ", ETA %v", time.Duration(float64(t-b)/rate*float64(time.Second)).Round(time.Second))
		}
	}
	if n := p.parts.Load(); n > 0 {
		fmt.Fprintf(&s, ", %d parts", n)
	}
	fmt.Fprintf(&s, ", %s/s", humanize.IBytes(uint64(rate)))
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lanes) > 0 {
		s.WriteString("; lanes")
		for i := range p.lanes {
			l := &p.lanes[i]
			pct := 100.0
			if l.total > 0 {
				pct = 100 * float64(l.bytes.Load()) / float64(l.total)
			}
			fmt.Fprintf(&s, " %.0f%%", pct)
		}
	}
	return s.String()
}

// stop ends the display: each bar complete, or left drawn where it stopped
// when the command failed; the plain printer stopped.
func (p *progress) stop() {
	p.stopOnce.Do(func() {
		close(p.done)
		p.wg.Wait()
		if p.bars == nil {
			return
		}
		p.mu.Lock()
		bars := []*mpb.Bar{p.totalBar}
		for i := range p.lanes {
			bars = append(bars, p.lanes[i].bar)
		}
		p.mu.Unlock()
		for _, b := range bars {
			if b != nil && !b.Completed() {
				b.Abort(false) // short of its total (the command failed): left drawn as it is
			}
		}
		p.phaseBar.SetTotal(-1, true)
		if p.console != nil {
			p.console.above(nil)
		}
		p.bars.Wait()
	})
}

// console is stderr as a command writes it (notes, log lines): while a
// terminal shows progress bars, every line goes above them, so that none is
// drawn over.
type console struct {
	mu   sync.Mutex
	w    io.Writer
	bars io.Writer
}

func (c *console) Write(b []byte) (int, error) {
	c.mu.Lock()
	bars := c.bars
	c.mu.Unlock()
	if bars != nil {
		if n, err := bars.Write(b); err == nil {
			return n, nil
		}
	}
	return c.w.Write(b)
}

// above sends what is written above bars from now on (nil: straight out).
func (c *console) above(bars io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bars = bars
}
