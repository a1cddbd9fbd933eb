package vtfifocli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/mattn/go-runewidth"
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

	var phases syncBuffer
	p = newProgress(&options{progress: "always", progressInterval: time.Hour}, &phases, "vtfifo test-restore ks/0/b")
	for _, ph := range []string{"download", "download", "prepare", "start", "check"} {
		p.phase(ph)
	}
	p.stop()
	assert.Equal(t, "vtfifo test-restore ks/0/b: download\n"+
		"vtfifo test-restore ks/0/b: prepare (download took 0s)\n"+
		"vtfifo test-restore ks/0/b: start (prepare took 0s)\n"+
		"vtfifo test-restore ks/0/b: check (start took 0s)\n", phases.String(), "a line per phase, a phase said again goes on")

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

// TestProgressWithLogsAtTerminalWidths: on a terminal of 80 and of 200
// columns, with log lines written while the bars run and the phase moving
// from download to prepare: once the output is played on a screen (cursor
// up, erase below, carriage returns), every log line is there whole, above
// the bars, none drawn over; no line is wider than the terminal, and the
// bars keep their rate and ETA (nothing cut off).
func TestProgressWithLogsAtTerminalWidths(t *testing.T) {
	for _, cols := range []int{80, 200} {
		t.Run(fmt.Sprintf("%d-columns", cols), func(t *testing.T) {
			tty, played := terminal(t, cols)
			con := &console{w: tty}
			o := &options{progress: "auto", progressInterval: time.Hour, console: con, notes: con, prog: "vtfifo restore"}
			p := newProgress(o, tty, "vtfifo restore ks/0/2026-11-25.101010.zone1-0000000100")
			p.phase("download")
			p.setLanes(&fifobackupengine.Manifest{StoredBytes: 3 << 30, Lanes: []fifobackupengine.LaneInfo{{StoredBytes: 1 << 30}, {StoredBytes: 2 << 30}}})
			var logs []string
			for i := range 8 {
				p.addLane(0, (1<<30)/8)
				p.addLane(1, (2<<30)/8)
				line := fmt.Sprintf("I1125 10:10:1%d.000000 restore.go:42] log line %d written while the bars run", i, i)
				logs = append(logs, line)
				fmt.Fprintln(con, line)
				time.Sleep(120 * time.Millisecond)
			}
			p.phase("prepare")
			o.notef("preparing with mariabackup 10.11.13")
			time.Sleep(400 * time.Millisecond)
			p.stop()
			screen := played()
			t.Logf("screen:\n%s", strings.Join(screen, "\n"))
			text := strings.Join(screen, "\n")
			for _, l := range append(logs, "vtfifo restore: preparing with mariabackup 10.11.13") {
				assert.Contains(t, screen, l, "a log line drawn over or cut:\n%s", text)
			}
			for _, l := range screen {
				assert.LessOrEqual(t, runewidth.StringWidth(l), cols, "wider than the terminal: %q", l)
			}
			last := screen[len(screen)-4:]
			assert.Contains(t, last[0], "vtfifo restore ks/0/2026-11-25.101010.zone1-0000000100: prepare", text)
			for i, name := range []string{"lane 0", "lane 1", "total"} {
				assert.True(t, strings.HasPrefix(last[i+1], name), "bar %q below the logs:\n%s", name, text)
				assert.Contains(t, last[i+1], "ETA", "the bar keeps its ETA:\n%s", text)
				assert.NotContains(t, last[i+1], "…", "the bar is not cut:\n%s", text)
			}
			assert.Contains(t, last[3], "3.0 GiB / 3.0 GiB")
		})
	}
}

// terminal opens a pseudo-terminal of cols columns and returns its end a
// program writes on, and played, which closes that end and returns the
// lines its output left on the screen (playOnScreen).
func terminal(t *testing.T, cols int) (tty *os.File, played func() []string) {
	master, tty, err := pty.Open()
	require.NoError(t, err)
	t.Cleanup(func() { master.Close() })
	require.NoError(t, pty.Setsize(tty, &pty.Winsize{Rows: 60, Cols: uint16(cols)}))
	var out bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = io.Copy(&out, master) }()
	return tty, func() []string {
		require.NoError(t, tty.Close())
		wg.Wait()
		return playOnScreen(out.String())
	}
}

// playOnScreen plays what a program wrote on a terminal (text, CR, LF, and
// the cursor-up and erase-below sequences the bars use; other sequences are
// dropped) and returns the lines left on the screen.
func playOnScreen(s string) []string {
	var lines [][]rune
	row, col := 0, 0
	put := func(r rune) {
		for len(lines) <= row {
			lines = append(lines, nil)
		}
		for len(lines[row]) < col {
			lines[row] = append(lines[row], ' ')
		}
		if col < len(lines[row]) {
			lines[row][col] = r
		} else {
			lines[row] = append(lines[row], r)
		}
		col++
	}
	csi := regexp.MustCompile(`^\x1b\[\??([0-9;]*)([A-Za-z])`)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\r':
			col = 0
		case '\n':
			row, col = row+1, 0
		case '\x1b':
			m := csi.FindStringSubmatch(string(rs[i:min(i+16, len(rs))]))
			if m == nil {
				continue
			}
			i += len([]rune(m[0])) - 1
			switch m[2] {
			case "A":
				n := 1
				fmt.Sscan(m[1], &n)
				row = max(row-n, 0)
			case "J":
				if row < len(lines) {
					lines[row] = lines[row][:min(col, len(lines[row]))]
					lines = lines[:row+1]
				}
			}
		default:
			put(rs[i])
		}
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, strings.TrimRight(string(l), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// TestRestoreOnATerminal: `vtfifo restore` itself, its stderr a terminal of
// 80 and of 200 columns: the restore's log lines (extraction, the per-phase
// stats) end up on the screen whole, above the display, which ends with the
// phase line and a bar per lane and the total, each as wide as the terminal
// at most; stdout holds only the result.
func TestRestoreOnATerminal(t *testing.T) {
	for _, cols := range []int{80, 200} {
		t.Run(fmt.Sprintf("%d-columns", cols), func(t *testing.T) {
			_, args := storageCopy(t)
			tty, played := terminal(t, cols)
			var stdout bytes.Buffer
			target := filepath.Join(t.TempDir(), "restored")
			code := Main(context.Background(), append([]string{"restore", "--target-dir=" + target}, args...), &stdout, tty)
			screen := played()
			require.Equal(t, 0, code, "stdout: %s\nterminal:\n%s", stdout.String(), strings.Join(screen, "\n"))
			assert.True(t, strings.HasPrefix(stdout.String(), "OK: backup ks/0/2026-11-23.050519.zone1-0000004989 restored into "+target), stdout.String())
			text := strings.Join(screen, "\n")
			assert.Regexp(t, `(?m)^\S+ \S+ \S+\] fifo restore: extracted \d+ files, \d+ bytes in \S+$`, text, "a log line whole")
			assert.Regexp(t, `(?m)fifo restore 2026-11-23.050519.zone1-0000004989 into .*: per-phase stats`, text, "the stats, logged before the display ends")
			require.GreaterOrEqual(t, len(screen), 6, text)
			display := screen[len(screen)-6:]
			assert.Contains(t, display[0], "vtfifo restore ks/0/2026-11-23.050519.zone1-0000004989: download", text)
			for i, name := range []string{"lane 0", "lane 1", "lane 2", "lane 3", "total"} {
				line := display[i+1]
				assert.True(t, strings.HasPrefix(line, name), "bar %q below the log lines:\n%s", name, text)
				assert.Contains(t, line, "100 %", text)
				assert.Contains(t, line, "ETA", text)
			}
			for _, l := range display {
				assert.LessOrEqual(t, runewidth.StringWidth(l), cols, "wider than the terminal: %q", l)
			}
		})
	}
}
