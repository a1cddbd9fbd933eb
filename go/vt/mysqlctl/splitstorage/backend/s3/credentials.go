package s3

import (
	"os"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// AWS credentials given in the environment are taken out of it at startup by
// a process that uses the split storage on S3 (vttablet, vtbackup, vtctld):
// Vitess logs the whole environment of every mysqld it starts (Mysqld.Start
// logs its exec.Cmd, Env included: a restore, vtbackup's own mysqld), and
// every child (mysqld, the backup tool) would inherit them. The S3 backend
// uses the values taken as static credentials, which is what the SDK's
// environment provider, first in its default chain, would do with them.

var envCreds struct {
	sync.Mutex
	creds *aws.Credentials
}

// awsCredentialVars are the variables the AWS SDK reads credentials from
// (AWS_ACCESS_KEY and AWS_SECRET_KEY are its older aliases).
var awsCredentialVars = []string{"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN"}

// TakeEnvCredentials moves AWS credentials from the process environment
// into this package, for its backends; it reports whether there were any.
// The servers call it at startup (servenv.OnInit) when they use the split
// storage on S3; other programs may call it themselves.
func TakeEnvCredentials() bool {
	get := func(names ...string) string {
		for _, n := range names {
			if v := os.Getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	id := get("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
	secret := get("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	if id == "" || secret == "" {
		return false
	}
	envCreds.Lock()
	defer envCreds.Unlock()
	envCreds.creds = &aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN"),
		Source: "environment (taken at startup)"}
	for _, n := range awsCredentialVars {
		_ = os.Unsetenv(n)
	}
	return true
}

// takenCredentials returns a provider for the credentials TakeEnvCredentials
// took, or nil.
func takenCredentials() aws.CredentialsProvider {
	envCreds.Lock()
	defer envCreds.Unlock()
	if envCreds.creds == nil {
		return nil
	}
	c := *envCreds.creds
	return credentials.StaticCredentialsProvider{Value: c}
}

// ForgetTakenCredentials undoes TakeEnvCredentials (for tests).
func ForgetTakenCredentials() {
	envCreds.Lock()
	defer envCreds.Unlock()
	envCreds.creds = nil
}
