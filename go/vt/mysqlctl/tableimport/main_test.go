package tableimport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestMain runs the test binary as a child a test kills (childEnv,
// scratchEnv) instead of the tests, when asked.
func TestMain(m *testing.M) {
	if dir := os.Getenv(scratchEnv); dir != "" {
		if _, err := testrestore.Open(context.Background(), dir, "the rows", testrestore.Options{Logger: logutil.NewMemoryLogger()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("open")
		select {} // until killed
	}
	if doc := os.Getenv(childEnv); doc != "" {
		os.Exit(runChild(doc))
	}
	os.Exit(m.Run())
}

// runChild imports as doc (a childRun) says, SIGKILLing itself before
// statement StopAt; it returns only if the import ended first.
func runChild(doc string) int {
	var run childRun
	if err := json.Unmarshal([]byte(doc), &run); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	db, err := sqlOpen(run.Socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n := 0
	execHook = func(string) error {
		if n++; n == run.StopAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		return nil
	}
	_, err = importOne(context.Background(), run.Copy, db, run.Src, run.To)
	fmt.Fprintf(os.Stderr, "the import ran to its end without statement %d: %v\n", run.StopAt, err)
	return 1
}

// preparedBackup takes a mariabackup backup of srv, extracts it into dir
// and prepares it with --export: the restored files of a table restore.
func preparedBackup(t *testing.T, srv *mariadbtest.Server, dir string) {
	t.Helper()
	mariabackup := mariadbtest.LookPath(t, "mariabackup")
	stream := mariadbtest.Backup(t, srv)
	mariadbtest.MbstreamExtract(t, dir, stream)
	if err := stream.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mariabackup, "--prepare", "--export", "--target-dir="+dir).CombinedOutput(); err != nil {
		t.Fatalf("mariabackup --prepare --export: %v\n%s", err, out)
	}
}

// restoredTable takes a prepared backup of srv (preparedBackup) into a
// directory on the ordinary disk that the throwaway server, as mysql when
// the tests run as root, can reach, reads d.table's definition from it and
// returns that InnoDB table as an import's Source.
func restoredTable(t *testing.T, srv *mariadbtest.Server, table string) Source {
	t.Helper()
	restore, err := os.MkdirTemp("", "tableimport-restore-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(restore) })
	require.NoError(t, os.Chmod(restore, 0o755))
	dir := filepath.Join(restore, "restore")
	preparedBackup(t, srv, dir)
	defs, _, err := testrestore.Definitions(context.Background(), dir, [][2]string{{"d", table}}, testrestore.Options{Logger: logutil.NewMemoryLogger()})
	require.NoError(t, err)
	files := []string{"d/" + table + ".cfg", "d/" + table + ".ibd", "d/" + table + ".frm"}
	return Source{DB: "d", Table: table, Dir: dir, Files: files, Create: defs["d."+table]}
}
