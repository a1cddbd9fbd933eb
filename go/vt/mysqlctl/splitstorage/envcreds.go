package splitstorage

import (
	"fmt"
	"os"

	"vitess.io/vitess/go/vt/log"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/servenv"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// A process that uses the split storage on S3 (vttablet, vtbackup, vtctld)
// takes the AWS credentials out of its environment at startup: see
// s3.TakeEnvCredentials for why (backend.EnvCredentials). Vitess's own s3 storage, named as the
// legacy one, reads them the SDK's default way: for it they are shared
// through a private file (s3.ShareTakenCredentials) until the process ends.
func init() {
	servenv.OnInit(func() {
		if backupstorage.BackupStorageImplementation != Name {
			return
		}
		remove, err := TakeEnvCredentials(FlagConfig(), os.TempDir())
		if err != nil {
			log.Error(fmt.Sprintf("split storage: %v: the legacy s3 storage (--%s) will not find them", err, flagLegacy))
		}
		servenv.OnClose(remove)
	})
}

// TakeEnvCredentials takes the credentials out of the environment where
// cfg's backend takes them (backend.EnvCredentials: S3's), and shares them
// with cfg's legacy storage where it reads them too; remove deletes what
// that left.
func TakeEnvCredentials(cfg Config, tmp string) (remove func(), err error) {
	if e, ok := cfg.selected().(backend.EnvCredentials); ok {
		return e.TakeEnvCredentials(cfg.Legacy, tmp)
	}
	return func() {}, nil
}
