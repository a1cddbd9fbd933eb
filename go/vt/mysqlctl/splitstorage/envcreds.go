package splitstorage

import (
	"fmt"
	"os"

	"vitess.io/vitess/go/vt/log"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/servenv"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/s3"
)

// A process that uses the split storage on S3 (vttablet, vtbackup, vtctld)
// takes the AWS credentials out of its environment at startup: see
// s3.TakeEnvCredentials for why. Vitess's own s3 storage, named as the
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

// TakeEnvCredentials takes the AWS credentials out of the environment where
// cfg's backend is S3, and shares them through a file under tmp where cfg's
// legacy storage is Vitess's s3 one; remove deletes that file.
func TakeEnvCredentials(cfg Config, tmp string) (remove func(), err error) {
	if cfg.Backend != BackendS3 || !s3.TakeEnvCredentials() || cfg.Legacy != "s3" {
		return func() {}, nil
	}
	remove, _, err = s3.ShareTakenCredentials(tmp)
	return remove, err
}
