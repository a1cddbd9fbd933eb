package splitstorage

import (
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/servenv"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/s3"
)

// A process that uses the split storage on S3 (vttablet, vtbackup, vtctld)
// takes the AWS credentials out of its environment at startup: see
// s3.TakeEnvCredentials for why.
func init() {
	servenv.OnInit(func() {
		if backupstorage.BackupStorageImplementation == Name && FlagConfig().Backend == BackendS3 {
			s3.TakeEnvCredentials()
		}
	})
}
