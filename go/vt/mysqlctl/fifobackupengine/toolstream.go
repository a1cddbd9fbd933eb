package fifobackupengine

import (
	"cmp"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"vitess.io/vitess/go/ioutil"
	"vitess.io/vitess/go/vt/dbconfigs"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// stream runs the tool and carries its output into the lanes.
func (b *backupRun) stream(ctx context.Context, workDir string) error {
	user, err := b.toolUser()
	if err != nil {
		return err
	}
	fifoDir, removeFIFOs, err := b.fifoDir(workDir)
	if err != nil {
		return err
	}
	defer removeFIFOs()
	openFiles, err := toolOpenFiles(b.params.Cnf.DataDir)
	if err != nil {
		return err
	}
	args, err := b.tool.backupArgs(&b.cfg, b.params.Cnf.Path, b.params.Cnf.SocketFile, user, workDir, b.source, fifoDir, openFiles)
	if err != nil {
		return err
	}
	if b.base != nil {
		// Both tools: copy the pages above this LSN, the base's to_lsn.
		args = append(args, "--incremental-lsn="+b.base.m.LSN.To)
	}
	args = append(args, b.scan.args...)

	toolCtx, killTool := context.WithCancel(ctx)
	defer killTool()
	t, err := b.startTool(toolCtx, user, args)
	if err != nil {
		return err
	}
	if t.stdout != nil {
		defer t.stdout.Close()
	}
	stopProgress := b.progress(ctx)
	var laneErr error
	if b.source == SourceStdout {
		laneErr = b.splitStdout(toolCtx, t.stdout)
	} else {
		laneErr = b.readFIFOs(toolCtx, fifoDir, t.done)
	}
	stopProgress()
	return b.finishTool(t, laneErr, killTool)
}

// toolUser is the MySQL user the tool connects as.
func (b *backupRun) toolUser() (string, error) {
	user := cmp.Or(b.cfg.User, dbconfigs.GlobalDBConfigs.Dba.User)
	if user == "" {
		return "", errtext.New(vtrpcpb.Code_INVALID_ARGUMENT, "no MySQL user for the backup tool: set --fifo-backup-user or --db-dba-user")
	}
	return user, nil
}

// fifoDir makes the directory the tool creates its FIFO streams in
// (newFIFODir), under the work directory or --fifo-backup-fifo-dir; "" and a
// no-op remove when it writes to stdout.
func (b *backupRun) fifoDir(workDir string) (dir string, remove func(), err error) {
	if b.source != SourceFIFO {
		return "", func() {}, nil
	}
	if b.cfg.FIFODir == "" {
		return newFIFODir(workDir, b.logger)
	}
	if st, err := os.Stat(b.cfg.FIFODir); err != nil || !st.IsDir() {
		return "", nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "--fifo-backup-fifo-dir %s must be an existing directory: the backup "+
			"makes one directory in it, not its parents", b.cfg.FIFODir)
	}
	return newFIFODir(b.cfg.FIFODir, b.logger)
}

// runningTool is the tool's process while the lanes read it.
type runningTool struct {
	cmd    *exec.Cmd
	stdout *os.File // the read end of its stdout (stdout source)
	stderr *tailLogger
	start  time.Time
	done   chan struct{} // closed when Wait returned, err set
	err    error
}

// startTool starts the tool with args, its secrets kept out of its argv
// and scrubbed from its output.
func (b *backupRun) startTool(ctx context.Context, user string, args []string) (*runningTool, error) {
	cmd := newToolCommand(ctx, b.tool.Path, args...)
	cmd.Env = os.Environ()
	_, secrets := redactSecrets(args)
	if dba := dbconfigs.GlobalDBConfigs.Dba; user == dba.User && dba.Password != "" {
		// The password goes through the environment, never the argv, so
		// it does not show in ps or in logs.
		cmd.Env = append(cmd.Env, "MYSQL_PWD="+dba.Password)
		secrets = append(secrets, dba.Password)
	}
	t := &runningTool{cmd: cmd, done: make(chan struct{})}
	// Our own pipe, not cmd.StdoutPipe: Wait runs concurrently with the
	// reads and would close that pipe under them when the tool exits.
	var stdoutW *os.File
	if b.source == SourceStdout {
		var err error
		if t.stdout, stdoutW, err = StdoutPipe(); err != nil {
			return nil, err
		}
		cmd.Stdout = stdoutW
	} else {
		stdoutLog := &lineLogger{logger: b.logger, prefix: b.tool.Flavor + " stdout: "}
		stdoutLog.hide(secrets...)
		cmd.Stdout = stdoutLog
	}
	// The tool may echo a flag with its value ("unknown variable
	// 'pass=...'"): its output is scrubbed of every secret it was given.
	t.stderr = newTailLogger(b.logger, b.tool.Flavor+" stderr: ", 20)
	t.stderr.hide(secrets...)
	cmd.Stderr = t.stderr
	b.logger.Infof("fifo backup: running %s %s", b.tool.Path, strings.Join(redactArgs(args), " "))

	t.start = time.Now()
	err := cmd.Start()
	if stdoutW != nil {
		stdoutW.Close() // the tool holds the write end now
	}
	if err != nil {
		if t.stdout != nil {
			t.stdout.Close()
		}
		return nil, errtext.Wrapf(err, "cannot start %s", b.tool.Path)
	}
	go func() { t.err = cmd.Wait(); close(t.done) }()
	return t, nil
}

// finishTool waits for the tool and returns the backup's error: the tool's,
// with its last words, or the lanes'. A stream that ends early is usually
// the tool failing: it gets a moment to exit so the error says why; if it
// does not, the lanes failed first and the tool is stopped.
func (b *backupRun) finishTool(t *runningTool, laneErr error, kill func()) error {
	killed := false
	if laneErr != nil {
		select {
		case <-t.done:
		case <-time.After(5 * time.Second):
			killed = true
			kill()
			<-t.done
		}
	} else {
		<-t.done
	}
	b.stats.since("Tool:Run", t.start)
	if t.cmd.ProcessState != nil {
		b.toolDiskRead = diskReadBytes(t.cmd.ProcessState)
	}
	t.stderr.flush()
	if t.err != nil && !killed {
		err := errtext.Errorf(vtrpcpb.Code_INTERNAL, "%s exited with an error: %v; its last output:\n%s", b.tool.Flavor, t.err, t.stderr.tail())
		if laneErr != nil {
			err = errtext.Wrapf(err, "stream ended with: %v", laneErr)
		}
		return err
	}
	return laneErr
}

// splitStdout deals the tool's single stream into the lanes by bytes.
func (b *backupRun) splitStdout(ctx context.Context, stdout *os.File) error {
	b.streamBytes = make([]atomic.Int64, 1)
	src := b.meteredSource(stdout, stdout, &b.streamBytes[0])
	return b.split(ctx, []io.Reader{src}, "splitting the tool's stream into lanes")
}

// lanePieceSize is the most dealt to a lane at a time: lanes stay within about
// one piece of each other whatever the tool's chunk size (10 MiB, or
// Percona's read buffer up to 64 MiB), at about 40 bytes of headers per piece.
const lanePieceSize = 1 << 20

// split deals the sources' chunks into the lanes by bytes, parsing and
// checking every chunk on the way: a backup that completes has well-formed
// lanes. A lane still writing (a part waiting for its upload slot, a
// compressor's frame) is passed over for one that is free, within 1/64 of
// the lanes' bytes; the waits go into the backup's stats (Split:Wait*), so
// its table says whether the tool or the lanes were the bound.
func (b *backupRun) split(ctx context.Context, srcs []io.Reader, what string) error {
	writers := make([]io.Writer, len(b.lanes))
	for i, l := range b.lanes {
		writers[i] = l
	}
	b.files = streamFiles{}
	laneStats, err := xbstream.SplitStreams(ctx, srcs, writers, xbstream.SplitOptions{
		PieceSize: lanePieceSize, FileEnded: b.files.fileEnded, PassBusyLanes: true,
		Waited: func(w xbstream.Wait, d time.Duration) { b.stats.timed(w.String(), d) },
	})
	for i, s := range laneStats {
		if i < len(b.lanes) {
			b.lanes[i].chunks = s.Chunks
		}
	}
	if err != nil {
		return errtext.Wrap(err, what)
	}
	return nil
}

// deadlineSource is a metered source that SplitStreams can still interrupt
// through the file's SetReadDeadline.
type deadlineSource struct {
	io.Reader
	f readDeadliner
}

// readDeadliner is a source SplitStreams can interrupt (os.File, fifoStream).
type readDeadliner interface{ SetReadDeadline(time.Time) error }

func (d deadlineSource) SetReadDeadline(t time.Time) error { return d.f.SetReadDeadline(t) }

// meteredSource counts what is read from r (reading f) as Source:Read and
// into total.
func (b *backupRun) meteredSource(r io.Reader, f readDeadliner, total *atomic.Int64) io.Reader {
	count := func(n int, _ time.Duration) { total.Add(int64(n)) }
	return deadlineSource{ioutil.NewMeteredReader(r, b.stats.bytesFunc("Source:Read"), count), f}
}
