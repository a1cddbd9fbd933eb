package s3

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A process whose split storage took the AWS credentials out of the
// environment may hold a second S3 client that reads them the SDK's default
// way: Vitess's own s3 backup storage, read as the split storage's legacy
// one (config.LoadDefaultConfig, on each use). For it the credentials go
// into a shared credentials file that lives in this process's memory only
// (memfd_create), named by AWS_SHARED_CREDENTIALS_FILE as /proc/self/fd/N:
// the environment, which Vitess logs and children inherit, holds a path,
// never a key; the file is gone with the process however it ends (kill -9
// included), and no child inherits it (close-on-exec). Where the kernel has
// no memfd_create, a file only this user can read in a private directory
// under parent, removed when the process ends by itself.

// ShareTakenCredentials writes the credentials TakeEnvCredentials took to a
// shared credentials file (its profile: $AWS_PROFILE, or default) and points
// AWS_SHARED_CREDENTIALS_FILE at it. remove closes or deletes the file and
// unsets the variable. It reports false, doing nothing, where none were
// taken.
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
	doc := fmt.Sprintf("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n", profile, c.AccessKeyID, c.SecretAccessKey)
	if c.SessionToken != "" {
		doc += "aws_session_token = " + c.SessionToken + "\n"
	}
	path, closeFile, err := memoryFile(doc)
	if err != nil {
		path, closeFile, err = privateFile(parent, doc)
	}
	if err != nil {
		return func() {}, false, fmt.Errorf("writing the AWS credentials for the legacy s3 storage: %w", err)
	}
	remove = func() {
		closeFile()
		os.Unsetenv("AWS_SHARED_CREDENTIALS_FILE")
	}
	if err := os.Setenv("AWS_SHARED_CREDENTIALS_FILE", path); err != nil {
		remove()
		return func() {}, false, err
	}
	return remove, true, nil
}

// memoryFile holds doc in a file of this process's memory, readable at the
// path it returns by this process only, until closed.
func memoryFile(doc string) (path string, closeFile func(), err error) {
	fd, err := unix.MemfdCreate("vtfifo-aws-credentials", unix.MFD_CLOEXEC)
	if err != nil {
		return "", nil, err
	}
	f := os.NewFile(uintptr(fd), "vtfifo-aws-credentials")
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", nil, err
	}
	if _, err := f.WriteString(doc); err != nil {
		f.Close()
		return "", nil, err
	}
	return fmt.Sprintf("/proc/self/fd/%d", fd), func() { f.Close() }, nil
}

// privateFile holds doc in a file only this user can read, in a private
// directory under parent, until removed.
func privateFile(parent, doc string) (path string, remove func(), err error) {
	dir, err := os.MkdirTemp(parent, "vtfifo-aws-")
	if err != nil {
		return "", nil, fmt.Errorf("a private directory for the AWS credentials: %w", err)
	}
	path = filepath.Join(dir, "credentials")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}
