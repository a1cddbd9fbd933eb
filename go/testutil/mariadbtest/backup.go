package mariadbtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BackupStream is the stdout of a running `mariabackup --backup --stream=xbstream`.
// Close waits for the process and returns its error (with its stderr).
type BackupStream struct {
	io.Reader
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	once   sync.Once
	err    error
}

// Close drains nothing: it closes the pipe, waits for mariabackup and
// returns an error carrying mariabackup's stderr if it failed.
func (b *BackupStream) Close() error {
	b.once.Do(func() {
		if c, ok := b.Reader.(io.Closer); ok {
			_ = c.Close()
		}
		if err := b.cmd.Wait(); err != nil {
			b.err = fmt.Errorf("mariabackup: %w\n%s", err, tail(b.stderr.Bytes(), 8<<10))
		}
	})
	return b.err
}

// Stderr returns what mariabackup wrote to stderr so far.
func (b *BackupStream) Stderr() string { return b.stderr.String() }

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Backup starts `mariabackup --backup --stream=xbstream --parallel=4` against
// srv (root over the socket) and returns its stdout. Extra args are appended
// (a later --parallel overrides). The process is killed at test end if still
// running; on failure Close's error carries its stderr, which is also logged.
func Backup(t testing.TB, srv *Server, args ...string) *BackupStream {
	t.Helper()
	bin := LookPath(t, backupBinary)
	target := filepath.Join(srv.Dir, fmt.Sprintf("backup-target-%d", time.Now().UnixNano()))
	require.NoError(t, os.Mkdir(target, 0o750))
	argv := append([]string{
		"--backup", "--stream=xbstream", "--parallel=4",
		"--user=" + srv.User, "--socket=" + srv.Socket,
		"--target-dir=" + target,
	}, args...)
	if srv.Password != "" {
		argv = append(argv, "--password="+srv.Password)
	}
	cmd := exec.Command(bin, argv...)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	bs := &BackupStream{Reader: out, cmd: cmd, stderr: stderr}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		if err := bs.Close(); err != nil {
			t.Logf("%v", err)
		}
	})
	return bs
}

// BackupToFile runs Backup and writes the whole stream to path.
func BackupToFile(t testing.TB, srv *Server, path string, args ...string) int64 {
	t.Helper()
	start := time.Now()
	bs := Backup(t, srv, args...)
	f, err := os.Create(path)
	require.NoError(t, err)
	n, err := io.Copy(f, bs)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	if err := bs.Close(); err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("mariadbtest: backup stream %d MiB in %v", n>>20, time.Since(start).Round(time.Millisecond))
	return n
}

// MbstreamExtract runs `mbstream -x -C dir` with stream on stdin, failing the
// test if it fails. It returns mbstream's stderr (it reports some failures only
// there, with exit status 0).
func MbstreamExtract(t testing.TB, dir string, stream io.Reader) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o750))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, LookPath(t, mbstreamBinary), "-x", "-C", dir)
	cmd.Stdin = stream
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	require.NoError(t, err, "mbstream -x: %s", stderr.String())
	return stderr.String()
}

var (
	cacheMu  sync.Mutex
	cacheDir string
	cache    = map[string]string{}
)

// CachedBackupStream returns the path of an xbstream file taken once per test
// binary run for key: the first caller starts a server, loads o, runs
// mariabackup with args, stops the server and keeps only the stream file.
// Call CleanupCache from TestMain after m.Run to remove the files.
func CachedBackupStream(t testing.TB, key string, o Options, args ...string) string {
	t.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if p, ok := cache[key]; ok {
		return p
	}
	if cacheDir == "" {
		d, err := os.MkdirTemp("", "mariadbtest-cache-")
		require.NoError(t, err)
		cacheDir = d
	}
	srv := Start(t)
	LoadSampleData(t, srv, o)
	// A clean shutdown checkpoints the redo log. Without it, tables created
	// just before the backup still have their creation in the redo log and
	// mariabackup streams them as "<table>.new" (renamed at prepare), so the
	// stream's file names would depend on when InnoDB last checkpointed.
	srv.Restart()
	p := filepath.Join(cacheDir, fmt.Sprintf("stream-%d.xbstream", len(cache)))
	BackupToFile(t, srv, p, args...)
	srv.Stop()
	cache[key] = p
	return p
}

// CleanupCache removes the files CachedBackupStream created.
func CleanupCache() {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if cacheDir != "" {
		_ = os.RemoveAll(cacheDir)
	}
	cacheDir = ""
	cache = map[string]string{}
}
