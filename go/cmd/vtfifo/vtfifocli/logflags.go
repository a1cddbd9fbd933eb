package vtfifocli

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	vtlog "vitess.io/vitess/go/vt/log"
	"vitess.io/vitess/go/vt/logutil"

	logutilpb "vitess.io/vitess/go/vt/proto/logutil"
)

// logFlags are --log-level and --quiet, of every command that logs: what
// reaches stderr besides the command's own result.
type logFlags struct {
	level string
	quiet bool
}

// logLevels are --log-level's values: the least level printed.
var logLevels = map[string]logutilpb.Level{"info": logutilpb.Level_INFO, "warning": logutilpb.Level_WARNING, "error": logutilpb.Level_ERROR}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "the log lines printed on stderr (the engine's, the storage's and the backup tool's): info, warning, error")
	fs.BoolVar(&l.quiet, "quiet", false, "print only errors on stderr (--log-level=error) besides the command's own result")
}

// validate checks --log-level; --quiet makes it error.
func (l *logFlags) validate() error {
	if _, ok := logLevels[l.level]; !ok {
		return invalid("log-level", l.level, "info, warning, error")
	}
	if l.quiet {
		l.level = "error"
	}
	return nil
}

// logger prints the events of the level and above on stderr, one line each.
func (l *logFlags) logger(stderr io.Writer) logutil.Logger {
	least := logLevels[l.level]
	return logutil.NewCallbackLogger(func(ev *logutilpb.Event) {
		if ev.Level >= least || ev.Level == logutilpb.Level_CONSOLE {
			fmt.Fprintf(stderr, "%s\n", logutil.EventString(ev))
		}
	})
}

// vitessLogs has Vitess's own log (its mysqld control, which the selftest
// runs) print the same levels on stderr as lines, not JSON; the returned
// func puts back the logger it replaced.
func (l *logFlags) vitessLogs(stderr io.Writer) (restore func()) {
	level := map[string]slog.Level{"info": slog.LevelInfo, "warning": slog.LevelWarn, "error": slog.LevelError}[l.level]
	old := vtlog.SwapLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))
	return func() { vtlog.SwapLogger(old) }
}
