package fifobackupengine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
)

// oldTablet lays out a tablet's files as Vitess's Mycnf names them, each
// with a file in it, and returns the Mycnf.
func oldTablet(t testing.TB) *mysqlctl.Mycnf {
	root := t.TempDir()
	cnf := &mysqlctl.Mycnf{DataDir: filepath.Join(root, "data"), InnodbDataHomeDir: filepath.Join(root, "innodb", "data"),
		InnodbLogGroupHomeDir: filepath.Join(root, "innodb", "logs"), RelayLogIndexPath: filepath.Join(root, "relay-logs", "relay.index"),
		RelayLogInfoPath: filepath.Join(root, "relay-logs", "relay.info"), BinLogPath: filepath.Join(root, "bin-logs", "bin"),
		RelayLogPath: filepath.Join(root, "relay-logs", "relay")}
	for _, p := range []string{filepath.Join(cnf.DataDir, "db", "t.ibd"), filepath.Join(cnf.InnodbDataHomeDir, "ibdata1"),
		filepath.Join(cnf.InnodbLogGroupHomeDir, "ib_logfile0"), cnf.RelayLogIndexPath, cnf.RelayLogInfoPath, cnf.BinLogPath + ".000001",
		cnf.BinLogPath + ".index", cnf.RelayLogPath + ".000002"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(t, os.WriteFile(p, []byte("old"), 0o640))
	}
	return cnf
}

// TestOldFilesOutOfTheWay: the tablet's old files are gone from their
// places as soon as setAsideOldFiles returns (moved beside the data
// directory), and removed once wait returns; with no room for both, they
// are deleted first. Files the restore does not clear stay.
func TestOldFilesOutOfTheWay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		need  int64
		aside bool
	}{
		{"room for both: moved, removed in the background", 1 << 20, true},
		{"no room for both: deleted first", 1 << 62, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cnf := oldTablet(t)
			root := filepath.Dir(cnf.DataDir)
			keep := filepath.Join(root, "my.cnf")
			require.NoError(t, os.WriteFile(keep, []byte("kept"), 0o640))
			logger := logutil.NewMemoryLogger()
			wait, err := setAsideOldFiles(cnf, tc.need, logger)
			require.NoError(t, err)
			paths, err := oldFiles(cnf)
			require.NoError(t, err)
			assert.Len(t, paths, 5, "the binary and relay logs are gone from their places too")
			for _, p := range paths {
				assert.NoFileExists(t, p)
				assert.NoDirExists(t, p)
			}
			wait()
			left, err := filepath.Glob(filepath.Join(root, oldFilesPrefix+"*"))
			require.NoError(t, err)
			assert.Empty(t, left, "nothing of the old files, nor their owner record, is left")
			assert.FileExists(t, keep)
			assert.Equal(t, tc.aside, strings.Contains(logger.String(), "existing files moved to"), logger.String())
		})
	}
}

// BenchmarkOldFilesDowntime: the time a restore waits before it can start
// writing, with 1 GiB of old files in 256 files: deleted first (Vitess's
// way, and ours where there is no room), or set aside (a rename per path;
// removed during the restore).
//
//	go test -run '^$' -bench BenchmarkOldFilesDowntime -benchtime 3x ./go/vt/mysqlctl/fifobackupengine/
func BenchmarkOldFilesDowntime(b *testing.B) {
	chunk := make([]byte, 4<<20)
	for _, aside := range []bool{false, true} {
		name := "deleted-first"
		if aside {
			name = "set-aside"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				cnf := oldTablet(b)
				for i := range 256 {
					f, err := os.Create(filepath.Join(cnf.DataDir, "db", fmt.Sprintf("t%03d.ibd", i)))
					require.NoError(b, err)
					_, err = f.Write(chunk)
					require.NoError(b, err)
					require.NoError(b, f.Close())
				}
				b.StartTimer()
				if !aside {
					require.NoError(b, removeExistingFiles(cnf))
					continue
				}
				wait, err := setAsideOldFiles(cnf, 1<<20, logutil.NewMemoryLogger())
				require.NoError(b, err)
				b.StopTimer()
				wait()
				b.StartTimer()
			}
		})
	}
}
