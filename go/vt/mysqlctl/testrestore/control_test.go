package testrestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/testutil/tier"
)

// TestTheControlJudgesAStartThatFailed: a start on the restored files that
// failed is judged by the same server started the same way on an empty
// data directory (real mariadbd): where that starts, the failure stays a
// verdict on the backup; where it exits too (a server that crashes
// wherever it starts), no verdict; where only the operator's flags keep it
// from starting, a usage error naming them; a MySQL server's control is
// initialized first (a stand-in that starts only on an initialized
// directory, recording its command lines); a failure that is no verdict
// already is left as it is, with no control run.
func TestTheControlJudgesAStartThatFailed(t *testing.T) {
	tier.Integration(t, "MariaDB")
	mariadbd, err := mysqlinstall.FindMysqld("")
	require.NoError(t, err)
	refused := errors.New("mysqld exited while starting (exit status 1)")
	// A stand-in's directory the server's user can traverse and write in.
	openDir := func(t *testing.T) string {
		dir, err := os.MkdirTemp("", "vtfifo-control-test-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o777))
		return dir
	}
	script := func(t *testing.T, body string) string {
		p := filepath.Join(openDir(t), "mysqld")
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/bash\n"+body), 0o755))
		return p
	}
	ctx := context.Background()

	t.Run("the server starts on an empty directory: a verdict", func(t *testing.T) {
		s, args := scratchServer(t, mariadbd, true)
		err := s.controlled(ctx, args, Options{}, refused)
		require.Error(t, err)
		assert.False(t, noVerdictIn(err), "%v", err)
		assert.Equal(t, refused.Error()+"; the same server, started the same way, starts on an empty data directory here: the restored files are what it "+
			"refused", err.Error())
		assertNoServerOn(t, s.dir)
	})
	t.Run("the server exits wherever it starts: no verdict", func(t *testing.T) {
		s, args := scratchServer(t, script(t, `echo "[ERROR] something of this host's" >&2; kill -SEGV $$`), true)
		err := s.controlled(ctx, args, Options{}, refused)
		require.Error(t, err)
		assert.True(t, noVerdictIn(err), "%v", err)
		assert.Contains(t, err.Error(), "; the same server, started the same way, does not start on an empty data directory here either: mysqld exited "+
			"while starting (signal: segmentation fault)")
		assert.Contains(t, err.Error(), "[ERROR] something of this host's")
	})
	t.Run("the operator's flags keep it from starting anywhere: a usage error", func(t *testing.T) {
		s, args := scratchServer(t, mariadbd, true)
		flags := []string{"--no-such-option-here=1"}
		err := s.controlled(ctx, append(args, flags...), Options{MysqldFlags: flags}, refused)
		require.Error(t, err)
		assert.True(t, flagvalue.IsContradiction(err), "%v", err)
		assert.Contains(t, err.Error(), `; started with --mysqld-flags="--no-such-option-here=1" it does not start on an empty data directory either, `+
			"and without them it does: those flags do not fit this server or this host, and nothing says the backup is damaged; correct them or leave them out")
		assertNoServerOn(t, s.dir)
	})
	t.Run("a MySQL server's control is initialized first", func(t *testing.T) {
		calls := filepath.Join(openDir(t), "calls")
		// MySQL 8 on an empty data directory refuses it; --initialize-insecure
		// builds it (here: a mark), and exits.
		s, args := scratchServer(t, script(t, `echo "$*" >> `+calls+`
for a in "$@"; do case "$a" in --datadir=*) d="${a#--datadir=}";; esac; done
case "$*" in *--initialize-insecure*) touch "$d/mysql.ibd"; exit 0;; esac
[ -e "$d/mysql.ibd" ] || { echo "[ERROR] [MY-010020] [Server] Data Dictionary initialization failed." >&2; exit 1; }
args=(); for a in "$@"; do case "$a" in --skip-replica-start|--skip-log-bin|--mysqlx=OFF) ;; *) args+=("$a");; esac; done
exec `+mariadbd+` "${args[@]}"
`), false)
		err := s.controlled(ctx, args, Options{}, refused)
		require.Error(t, err)
		assert.False(t, noVerdictIn(err), "%v", err)
		assert.Contains(t, err.Error(), "starts on an empty data directory here: the restored files are what it refused")
		b, err := os.ReadFile(calls)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		require.Len(t, lines, 2, string(b))
		control := filepath.Join(s.dir, "control")
		assert.True(t, strings.HasPrefix(lines[0], "--no-defaults --initialize-insecure --datadir="+filepath.Join(control, "data")+" "), lines[0])
		assert.NotContains(t, lines[0], "--skip-grant-tables")
		assert.Equal(t, strings.Join(relocated(args, s.placeArgs(), (&server{dir: control, dataDir: filepath.Join(control, "data")}).placeArgs()), " "),
			lines[1], "the start: the failed one's arguments, its files placed in the control's directory")
		assertNoServerOn(t, s.dir)
	})
	t.Run("no verdict already: no control", func(t *testing.T) {
		s, args := scratchServer(t, mariadbd, true)
		already := couldNotRun(refused)
		assert.Equal(t, already, s.controlled(ctx, args, Options{}, already))
		assert.NoDirExists(t, filepath.Join(s.dir, "control"))
	})
}

// scratchServer is a server of bin on a scratch directory of its own that
// the server's user can traverse (unlike t.TempDir's parent), and its
// arguments; from, when given, is moved in as its data directory.
func scratchServer(t *testing.T, bin string, mariadb bool, from ...string) (*server, []string) {
	dir, err := os.MkdirTemp("", "vtfifo-scratch-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	data := filepath.Join(dir, "data")
	if len(from) > 0 {
		require.NoError(t, os.Rename(from[0], data))
	} else {
		require.NoError(t, os.Mkdir(data, 0o750))
	}
	require.NoError(t, os.WriteFile(filepath.Join(data, "backup-my.cnf"), []byte("[mysqld]\n"), 0o640))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "tmp"), 0o750))
	runAs, err := mysqlinstall.ServerUser(dir)
	require.NoError(t, err)
	if runAs != nil {
		require.NoError(t, mysqlinstall.ChownTree(dir, runAs))
	}
	s := &server{bin: bin, dir: dir, dataDir: data, mariadb: mariadb, runAs: runAs, logger: logutil.NewMemoryLogger()}
	args, err := s.args(Options{BufferPool: 64 << 20})
	require.NoError(t, err)
	return s, args
}

// assertNoServerOn fails where a process runs with dir on its command line.
func assertNoServerOn(t *testing.T, dir string) {
	t.Helper()
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		b, _ := os.ReadFile(c)
		assert.NotContains(t, string(b), dir, "%s still runs on the scratch directory", c)
	}
}
