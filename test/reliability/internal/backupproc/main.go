// Command backupproc runs one mysqlctl.Backup or mysqlctl.Restore of a test
// tablet with the fifo engine and the split storage, configured by the same
// flags vttablet takes (--split-storage-*, --fifo-backup-*). It exists so the
// reliability tests can SIGKILL the process taking a backup or a restore at
// a moment of their choosing; it is not a product binary.
//
//	backupproc --mode=backup|restore --tablet-uid=N --keyspace=ks --shard=0 \
//	    --split-storage-root=DIR ...   (VTDATAROOT and EXTRA_MY_CNF from the environment)
//
// It prints "phase: <name>" lines on stdout as it goes, and exits 0 on success.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/vt/dbconfigs"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

func main() {
	fs := pflag.NewFlagSet("backupproc", pflag.ExitOnError)
	mode := fs.String("mode", "backup", "backup or restore")
	uid := fs.Uint32("tablet-uid", 0, "tablet UID (its my.cnf is under VTDATAROOT)")
	keyspace := fs.String("keyspace", "ks", "keyspace")
	shard := fs.String("shard", "0", "shard")
	db := fs.String("db-name", "sample", "database name for restore")
	compression := fs.String("compression-engine-name", "zstd", "Vitess's compression engine")
	splitstorage.RegisterFlags(fs)
	fifobackupengine.RegisterFlags(fs)
	_ = fs.Parse(os.Args[1:])
	mysqlctl.CompressionEngineName = *compression
	backupstorage.BackupStorageImplementation = splitstorage.Name
	if err := splitstorage.ValidateFlags(fs); err != nil {
		fail(err)
	}
	if err := fifobackupengine.ValidateFlags(fs); err != nil {
		fail(err)
	}
	if dbconfigs.GlobalDBConfigs.Dba.User == "" {
		dbconfigs.GlobalDBConfigs.Dba.User = "vt_dba"
	}
	mysqld, cnf, err := mysqlctl.OpenMysqldAndMycnf(*uid, collations.MySQL8())
	if err != nil {
		fail(err)
	}
	defer mysqld.Close()
	logger := logutil.NewConsoleLogger()
	ctx := context.Background()
	fmt.Println("phase: start")
	switch *mode {
	case "backup":
		err = mysqlctl.Backup(ctx, mysqlctl.BackupParams{
			Cnf: cnf, Mysqld: mysqld, Logger: logger, Concurrency: 2,
			Keyspace: *keyspace, Shard: *shard, TabletAlias: fmt.Sprintf("zone1-%010d", *uid),
			BackupTime: time.Now(), Stats: backupstats.NoStats(), BackupEngine: "fifo", UpgradeSafe: true,
		})
	case "restore":
		_, err = mysqlctl.Restore(ctx, mysqlctl.RestoreParams{
			Cnf: cnf, Mysqld: mysqld, Logger: logger, Concurrency: 2, DeleteBeforeRestore: true,
			DbName: *db, Keyspace: *keyspace, Shard: *shard, StartTime: time.Now(),
			Stats: backupstats.NoStats(), MysqlShutdownTimeout: time.Minute, AllowedBackupEngines: []string{"fifo"},
		})
	default:
		err = fmt.Errorf("--mode must be backup or restore, not %q", *mode)
	}
	if err != nil {
		fail(err)
	}
	fmt.Println("phase: done")
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "backupproc: %v\n", err)
	os.Exit(1)
}
