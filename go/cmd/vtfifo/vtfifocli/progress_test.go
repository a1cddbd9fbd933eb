package vtfifocli

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

func feedLanes(p *progress, steps int, every time.Duration) {
	p.setLanes(&fifobackupengine.Manifest{StoredBytes: 3 << 20, Lanes: []fifobackupengine.LaneInfo{{StoredBytes: 1 << 20}, {StoredBytes: 2 << 20}}})
	for i := 0; i < steps; i++ {
		p.addLane(0, (1<<20)/steps)
		p.addLane(1, (2<<20)/steps)
		time.Sleep(every)
	}
	p.stop()
}

// TestProgressOnATerminal: on a pseudo-terminal the progress is a bar per
// lane and one for the total, redrawn in place with bytes, rate and ETA.
func TestProgressOnATerminal(t *testing.T) {
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer master.Close()
	require.NoError(t, pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 160}))
	var out bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = io.Copy(&out, master) }()

	p := newProgress(&options{progress: "auto", progressInterval: time.Hour}, tty, "vtfifo restore ks/0/b")
	require.NotNil(t, p.bars, "a terminal gets bars")
	feedLanes(p, 10, 100*time.Millisecond)
	require.NoError(t, tty.Close())
	wg.Wait()

	s := out.String()
	assert.Contains(t, s, "lane 0")
	assert.Contains(t, s, "lane 1")
	assert.Contains(t, s, "vtfifo restore ks/0/b")
	assert.Contains(t, s, "ETA")
	assert.Contains(t, s, "3.0 MiB / 3.0 MiB", "the total bar ends complete")
	assert.Regexp(t, regexp.MustCompile(`\d+(\.\d+)? ?[KM]iB/s`), s, "a rate")
	redraws := strings.Count(s, "\x1b[") // cursor moves and line clears
	assert.GreaterOrEqual(t, redraws, 5, "the bars are redrawn in place:\n%q", s)
	assert.Greater(t, strings.Count(s, "lane 0"), 2, "drawn more than once")
}

// TestProgressPlainLines: without a terminal (--progress=always) the same
// numbers come as plain lines, no escape sequences.
func TestProgressPlainLines(t *testing.T) {
	var out syncBuffer
	p := newProgress(&options{progress: "always", progressInterval: 100 * time.Millisecond}, &out, "vtfifo verify ks/0/b")
	require.Nil(t, p.bars)
	feedLanes(p, 10, 60*time.Millisecond)
	s := out.String()
	assert.NotContains(t, s, "\x1b[")
	lines := strings.Split(strings.TrimSpace(s), "\n")
	assert.GreaterOrEqual(t, len(lines), 3, "%q", s)
	assert.Regexp(t, `^vtfifo verify ks/0/b: \S+ \S+ of 3\.0 MiB \(\d+%\), ETA \S+, \S+ \S+/s; lanes \d+% \d+%$`, lines[1])

	var quiet syncBuffer
	feedLanes(newProgress(&options{progress: "auto", progressInterval: 100 * time.Millisecond}, &quiet, "x"), 3, 60*time.Millisecond)
	assert.Empty(t, quiet.String(), "auto: nothing when not on a terminal")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
