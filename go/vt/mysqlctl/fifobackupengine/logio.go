package fifobackupengine

import (
	"bytes"
	"strings"
	"sync"

	"vitess.io/vitess/go/vt/logutil"
)

// lineLogger is an io.Writer that sends each complete line to the logger,
// so a tool's stderr shows up line by line in the tablet's log.
type lineLogger struct {
	logger logutil.Logger
	prefix string

	mu      sync.Mutex
	partial []byte
	onLine  func(string)
	secrets scrubber
}

// hide makes the logger replace these values (the secrets the tool was
// given) in every line it logs or keeps.
func (l *lineLogger) hide(secrets ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.secrets.add(secrets...)
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.emit(string(bytes.TrimRight(l.partial[:i], "\r")))
		l.partial = l.partial[i+1:]
	}
	// A tool that never ends its line must not grow memory without bound.
	if len(l.partial) > 64<<10 {
		l.emit(string(l.partial))
		l.partial = nil
	}
	return len(p), nil
}

func (l *lineLogger) emit(line string) {
	line = l.secrets.scrub(line)
	l.logger.Infof("%s%s", l.prefix, line)
	if l.onLine != nil {
		l.onLine(line)
	}
}

// flush logs a last line that had no newline.
func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.emit(string(l.partial))
		l.partial = nil
	}
}

// tailLogger is a lineLogger that also keeps the last lines for errors.
type tailLogger struct {
	lineLogger
	keep    int
	lines   []string
	dropped bool // lines went before the kept ones
}

func newTailLogger(logger logutil.Logger, prefix string, keep int) *tailLogger {
	t := &tailLogger{lineLogger: lineLogger{logger: logger, prefix: prefix}, keep: keep}
	t.onLine = func(s string) {
		t.lines = append(t.lines, s)
		if len(t.lines) > t.keep {
			t.lines = t.lines[len(t.lines)-t.keep:]
			t.dropped = true
		}
	}
	return t
}

// tail returns the kept lines.
func (t *tailLogger) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// whole reports whether the kept lines are all there were.
func (t *tailLogger) whole() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.dropped
}
