package s3

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A process whose split storage took the AWS credentials out of the
// environment may hold a second S3 client that reads them the SDK's default
// way: Vitess's own s3 backup storage, read as the split storage's legacy
// one (config.LoadDefaultConfig, on its first use). For it the credentials
// go into a shared credentials file only this user can read, in a private
// directory, and AWS_SHARED_CREDENTIALS_FILE names it: the environment, which
// Vitess logs and children inherit, holds a path, never a key.

// ShareTakenCredentials writes the credentials TakeEnvCredentials took to a
// shared credentials file under parent (its profile: $AWS_PROFILE, or
// default) and points AWS_SHARED_CREDENTIALS_FILE at it. remove deletes the
// file and its directory and unsets the variable. It reports false, doing
// nothing, where none were taken.
func ShareTakenCredentials(parent string) (remove func(), shared bool, err error) {
	envCreds.Lock()
	c := envCreds.creds
	envCreds.Unlock()
	if c == nil {
		return func() {}, false, nil
	}
	profile := os.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	for _, v := range []string{profile, c.AccessKeyID, c.SecretAccessKey, c.SessionToken} {
		if strings.ContainsAny(v, "\n\r") {
			return func() {}, false, errors.New("the AWS credentials or profile hold a line break: they cannot be written to a shared credentials file")
		}
	}
	dir, err := os.MkdirTemp(parent, "vtfifo-aws-")
	if err != nil {
		return func() {}, false, fmt.Errorf("a private directory for the AWS credentials: %w", err)
	}
	remove = func() {
		os.RemoveAll(dir)
		os.Unsetenv("AWS_SHARED_CREDENTIALS_FILE")
	}
	doc := fmt.Sprintf("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n", profile, c.AccessKeyID, c.SecretAccessKey)
	if c.SessionToken != "" {
		doc += "aws_session_token = " + c.SessionToken + "\n"
	}
	path := filepath.Join(dir, "credentials")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		remove()
		return func() {}, false, fmt.Errorf("writing the AWS credentials for the legacy s3 storage: %w", err)
	}
	if err := os.Setenv("AWS_SHARED_CREDENTIALS_FILE", path); err != nil {
		remove()
		return func() {}, false, err
	}
	return remove, true, nil
}
