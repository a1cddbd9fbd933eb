package endtoend

import (
	"os"
	"path/filepath"
	"testing"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// storageBackend is one storage configuration the flows run against.
type storageBackend struct {
	name   string
	impl   string // --backup-storage-implementation, also its stats label
	engine string // the engine under test with this storage
	keyID  string // the encryption key that wraps every backup ("": in the clear)
	// prepare returns the cluster's PrepareStorage hook (servers are started there).
	prepare func(t *testing.T) func(c *cluster.Cluster) (cluster.Storage, error)
	// open opens the same storage inside the test process, to read manifests.
	open func(c *cluster.Cluster) (backupstorage.BackupStorage, error)
	// config is the split storage's configuration in the test process (nil
	// for another storage).
	config func() splitstorage.Config
}

// storageBackends lists the backends under test: the split storage on local disk, on S3
// (versitygw), on GCS (fake-gcs-server) and on Azure (Azurite), each with the fifo engine; on
// GCS and Azure every backup is encrypted (--split-storage-encryption-key-file). With
// VTFIFO_E2E_BASELINE=1 Vitess's own xtrabackup engine + file storage run the same flows
// too (the reference the plugins are compared with).
func storageBackends() []storageBackend {
	var out []storageBackend
	for _, kind := range splitstoragetest.All() {
		name, encrypted, sealed := "split-"+kind, kind == splitstorage.BackendGCS || kind == splitstorage.BackendAzure, kind == splitstorage.BackendS3
		if kind == splitstorage.BackendFile {
			name = "split-local"
		}
		if encrypted {
			name += "-encrypted"
		}
		if sealed {
			name += "-sealed"
		}
		out = append(out, splitBackend(name, kind, encrypted, sealed))
	}
	if os.Getenv("VTFIFO_E2E_BASELINE") != "" {
		out = append(out, storageBackend{name: "baseline-xtrabackup-file", impl: "file", engine: "xtrabackup",
			prepare: func(t *testing.T) func(c *cluster.Cluster) (cluster.Storage, error) {
				return func(c *cluster.Cluster) (cluster.Storage, error) {
					dir := filepath.Join(c.Root, "backups")
					return cluster.FileStorage(dir), c.MkdirOwned(dir)
				}
			}, open: func(c *cluster.Cluster) (backupstorage.BackupStorage, error) {
				filebackupstorage.FileBackupStorageRoot = filepath.Join(c.Root, "backups")
				return backupstorage.BackupStorageMap["file"], nil
			}})
	}
	return out
}

// splitBackend is the split storage on one backend, its backups encrypted or not, sealed
// or not (--split-storage-signing-key-file). Servers are started by the test (as the
// test's user); the local backend's root is owned by the cluster's user.
func splitBackend(name, kind string, encrypted, sealed bool) storageBackend {
	var cfg splitstorage.Config
	keyID := ""
	if encrypted {
		keyID = "e2e-1"
	}
	return storageBackend{name: name, impl: splitstorage.Name, engine: "fifo", keyID: keyID,
		prepare: func(t *testing.T) func(c *cluster.Cluster) (cluster.Storage, error) {
			return func(c *cluster.Cluster) (cluster.Storage, error) {
				var srv *splitstoragetest.Server
				if kind == splitstorage.BackendFile {
					root := filepath.Join(c.Root, "split-backups")
					if err := c.MkdirOwned(root); err != nil {
						return cluster.Storage{}, err
					}
					cfg = splitstoragetest.TestConfig()
					cfg.Backend = splitstorage.BackendFile
					cfg.File.Root = root
					srv = &splitstoragetest.Server{Kind: kind, Config: cfg, Env: map[string]string{}, Dir: root}
				} else {
					srv = splitstoragetest.Start(t, kind)
					srv.Setenv(t) // for open, in this process
				}
				if kind == splitstorage.BackendAzure {
					// The key file, where the cluster's user can read it.
					key, err := os.ReadFile(srv.Config.Azure.KeyFile)
					if err != nil {
						return cluster.Storage{}, err
					}
					srv.Config.Azure.KeyFile = filepath.Join(c.Root, "azure.key")
					if err := c.WriteFileOwned(srv.Config.Azure.KeyFile, key, 0o600); err != nil {
						return cluster.Storage{}, err
					}
				}
				if encrypted {
					// A key file the cluster's user reads; this process uses the same one.
					srv.Config.EncryptionKeyFile = filepath.Join(c.Root, "backup-keys")
					keys, err := os.ReadFile(splitstoragetest.KeyFile(t, keyID))
					if err != nil {
						return cluster.Storage{}, err
					}
					if err := c.WriteFileOwned(srv.Config.EncryptionKeyFile, keys, 0o400); err != nil {
						return cluster.Storage{}, err
					}
				}
				if sealed {
					srv.Config.SigningKeyFile = filepath.Join(c.Root, "signing-keys")
					keys, err := os.ReadFile(splitstoragetest.KeyFile(t, "e2e-sign-1"))
					if err != nil {
						return cluster.Storage{}, err
					}
					if err := c.WriteFileOwned(srv.Config.SigningKeyFile, keys, 0o400); err != nil {
						return cluster.Storage{}, err
					}
				}
				// Small parts so a few MB of sample data spans many part objects.
				srv.Config.PartSize = 1 << 20
				srv.Config.MemoryBudget = 16 << 20
				cfg = srv.Config
				return cluster.Storage{Name: name, Flags: srv.Flags(), Env: srv.Environ()}, nil
			}
		},
		open: func(c *cluster.Cluster) (backupstorage.BackupStorage, error) {
			return splitstorage.New(cfg)
		},
		config: func() splitstorage.Config { return cfg },
	}
}

// otherEngine is a different default engine for the per-request --backup-engine check.
func otherEngine(engine string) string {
	if engine == "xtrabackup" {
		return "builtin"
	}
	return "xtrabackup"
}

// engineEmitsStats: Vitess's xtrabackup engine reports no per-phase stats (only storage ones).
func engineEmitsStats(engine string) bool { return engine != "xtrabackup" }

// engineFor returns the tablet/vtbackup flags with name as the default engine. The flags
// of every engine are always given, so a per-request --backup-engine can pick another one.
func engineFor(c *cluster.Cluster, name string) cluster.Engine {
	return cluster.Engine{Name: name, Flags: append(xtrabackupFlags(c),
		// The fifo engine: mariabackup's single stdout stream split into 2 lanes.
		"--fifo-backup-tool-path="+c.XtrabackupRoot+"/xtrabackup",
		"--fifo-backup-tool-flavor=mariabackup",
		"--fifo-backup-lanes=2",
		"--fifo-backup-parallel=2",
		"--fifo-backup-progress-interval=0",
	)}
}

// stockEngine is Vitess's xtrabackup engine with its flags alone, as a
// stock vttablet takes them.
func stockEngine(c *cluster.Cluster) cluster.Engine {
	return cluster.Engine{Name: "xtrabackup", Flags: xtrabackupFlags(c)}
}

// xtrabackupFlags configure Vitess's xtrabackup engine over mariabackup.
func xtrabackupFlags(c *cluster.Cluster) []string {
	return []string{
		"--xtrabackup-root-path=" + c.XtrabackupRoot,
		"--xtrabackup-user=vt_dba",
		"--xtrabackup-stream-mode=xbstream",
		"--xtrabackup-stripes=2",
	}
}
