package splitstorage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// serverCopier is a Backend that copies an object of another Backend to
// the same key without the bytes passing through this process, where both
// are on one service (one S3 endpoint, one file system).
type serverCopier interface {
	// CopyFrom copies src's key here. ok is false, with nothing done, when
	// src is not one it can copy from (another service, an object larger
	// than one copy request takes): the caller streams it instead.
	CopyFrom(ctx context.Context, src Backend, key string, size int64, opts PutOptions) (ok bool, err error)
}

// serverCopyRate is the slowest a server-side copy is assumed to move: an
// attempt is given RequestTimeout plus size at this rate before the
// watchdog may call it stalled (it moves no byte through this process).
const serverCopyRate = 8 << 20

// CopyFrom retries the wrapped backend's server-side copy.
func (r *retrying) CopyFrom(ctx context.Context, src Backend, key string, size int64, opts PutOptions) (bool, error) {
	c, ok := r.Backend.(serverCopier)
	if !ok {
		return false, nil
	}
	if sr, isRetrying := src.(*retrying); isRetrying {
		src = sr.Backend
	}
	copied := false
	err := r.do(ctx, "copy", key, func(ctx context.Context, kick func()) error {
		stop := kickUntil(kick, time.Now().Add(time.Duration(size/serverCopyRate)*time.Second+r.policy.RequestTimeout))
		defer stop()
		var err error
		copied, err = c.CopyFrom(ctx, src, key, size, opts)
		return err
	})
	return copied, err
}

// kickUntil keeps a watchdog from firing until the deadline; stop ends it.
func kickUntil(kick func(), deadline time.Time) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if now.After(deadline) {
					return
				}
				kick()
			}
		}
	}()
	return func() { close(done); <-finished }
}

// CopyFrom hard-links the object of another file backend on the same file
// system (objects are never written in place: Put renames a new file over).
func (l *localBackend) CopyFrom(ctx context.Context, src Backend, key string, size int64, opts PutOptions) (bool, error) {
	sl, ok := src.(*localBackend)
	if !ok {
		return false, nil
	}
	from, err := sl.path(key)
	if err != nil {
		return false, err
	}
	to, err := l.path(key)
	if err != nil {
		return false, err
	}
	if err := l.mkdirs(filepath.Dir(to)); err != nil {
		return false, localErr(err)
	}
	if err := os.Remove(to); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, localErr(err)
	}
	if err := os.Link(from, to); err != nil {
		if errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EMLINK) {
			return false, nil // another file system, or no links there: stream
		}
		return false, localErr(err)
	}
	return true, localErr(syncDir(filepath.Dir(to)))
}

// maxS3CopyObject is the largest object one CopyObject request copies.
const maxS3CopyObject = 5_000_000_000

// CopyFrom copies an object of a bucket on the same S3 endpoint with
// CopyObject: the server moves the bytes, and computes the CRC32C of the
// copy, which the verification after the copy checks.
func (b *s3Backend) CopyFrom(ctx context.Context, src Backend, key string, size int64, opts PutOptions) (bool, error) {
	sb, ok := src.(*s3Backend)
	if !ok || sb.endpoint != b.endpoint || size > maxS3CopyObject {
		return false, nil
	}
	in := &s3.CopyObjectInput{
		Bucket:            aws.String(b.bucket),
		Key:               aws.String(b.prefix + key),
		CopySource:        aws.String(url.PathEscape(sb.bucket + "/" + sb.prefix + key)),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
	}
	if b.sse != "" {
		in.ServerSideEncryption = b.sse
		if b.kmsKeyID != "" {
			in.SSEKMSKeyId = aws.String(b.kmsKeyID)
		}
	}
	if b.storageClass != "" {
		in.StorageClass = b.storageClass
	}
	if _, err := b.client.CopyObject(ctx, in); err != nil {
		return false, fmt.Errorf("server-side copy from %s: %w", sb, s3Err(err))
	}
	return true, nil
}

// CopyFrom copies an object of another bucket or prefix with GCS's rewrite
// (the Go client repeats it until done): every GCS backend of a process
// talks to one service (STORAGE_EMULATOR_HOST included).
func (b *gcsBackend) CopyFrom(ctx context.Context, src Backend, key string, size int64, opts PutOptions) (bool, error) {
	sb, ok := src.(*gcsBackend)
	if !ok {
		return false, nil
	}
	if _, err := b.bucket.Object(b.prefix + key).CopierFrom(sb.bucket.Object(sb.prefix + key)).Run(ctx); err != nil {
		return false, fmt.Errorf("server-side copy from %s: %w", sb, gcsErr(err))
	}
	return true, nil
}
