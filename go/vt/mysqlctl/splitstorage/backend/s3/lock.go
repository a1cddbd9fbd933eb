package s3

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// S3 Object Lock: a bucket created with Object Lock enabled (which turns
// versioning on) keeps each object version from deletion or replacement
// until its retain-until date (GOVERNANCE: principals granted
// s3:BypassGovernanceRetention may shorten it; COMPLIANCE: no one may), and
// while it has a legal hold. A plain DELETE on a versioned bucket adds a
// delete marker and removes nothing: the locked version stays.

var _ backend.Locker = (*Backend)(nil)

func s3Mode(m backend.LockMode) types.ObjectLockRetentionMode {
	if m == backend.LockCompliance {
		return types.ObjectLockRetentionModeCompliance
	}
	return types.ObjectLockRetentionModeGovernance
}

func lockMode(m types.ObjectLockRetentionMode) backend.LockMode {
	if m == types.ObjectLockRetentionModeCompliance {
		return backend.LockCompliance
	}
	return backend.LockGovernance
}

// lockHeaders sets a Put's lock: the object is stored locked by the same
// request (S3 requires a checksum on it, which every Put sends).
func lockHeaders(in *s3.PutObjectInput, l backend.Lock) {
	in.ObjectLockMode, in.ObjectLockRetainUntilDate, in.ObjectLockLegalHoldStatus = copyLock(l)
}

// copyLock is a request's lock headers (PutObject, CopyObject,
// CreateMultipartUpload): none for the zero Lock.
func copyLock(l backend.Lock) (mode types.ObjectLockMode, until *time.Time, hold types.ObjectLockLegalHoldStatus) {
	if !l.Until.IsZero() {
		mode, until = types.ObjectLockMode(s3Mode(l.Mode)), aws.Time(l.Until.UTC())
	}
	if l.LegalHold {
		hold = types.ObjectLockLegalHoldStatusOn
	}
	return mode, until, hold
}

// noLockConfig says that an object has no retention or no legal hold.
func noLockConfig(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchObjectLockConfiguration" || ae.ErrorCode() == "ObjectLockConfigurationNotFoundError")
}

// LockOf reads the object's retention and legal hold.
func (b *Backend) LockOf(ctx context.Context, key string) (backend.Lock, error) {
	var l backend.Lock
	bucket, k := aws.String(b.bucket), aws.String(b.prefix+key)
	r, err := b.client.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: bucket, Key: k})
	switch {
	case err == nil && r.Retention != nil:
		if r.Retention.RetainUntilDate != nil {
			l.Until = r.Retention.RetainUntilDate.UTC()
		}
		l.Mode = lockMode(r.Retention.Mode)
	case err != nil && !noLockConfig(err):
		return l, s3Err(err)
	}
	h, err := b.client.GetObjectLegalHold(ctx, &s3.GetObjectLegalHoldInput{Bucket: bucket, Key: k})
	switch {
	case err == nil && h.LegalHold != nil:
		l.LegalHold = h.LegalHold.Status == types.ObjectLockLegalHoldStatusOn
	case err != nil && !noLockConfig(err):
		return l, s3Err(err)
	}
	return l, nil
}

// Lock extends the object's retention (PutObjectRetention, which would
// shorten one it is given a date before) and sets its legal hold.
func (b *Backend) Lock(ctx context.Context, key string, want backend.Lock) error {
	return backend.ExtendLock(ctx, key, want, b.LockOf, func(ctx context.Context, key string, l, had backend.Lock) error {
		bucket, k := aws.String(b.bucket), aws.String(b.prefix+key)
		if !l.Until.Equal(had.Until) || l.Mode != had.Mode {
			// Governance made compliance changes a governance retention:
			// S3 asks for the bypass (s3:BypassGovernanceRetention) even
			// though nothing is shortened.
			upgrade := had.Mode == backend.LockGovernance && l.Mode == backend.LockCompliance && !had.Until.IsZero()
			_, err := b.client.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: bucket, Key: k,
				Retention:         &types.ObjectLockRetention{Mode: s3Mode(l.Mode), RetainUntilDate: aws.Time(l.Until.UTC())},
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, BypassGovernanceRetention: aws.Bool(upgrade)})
			if err != nil {
				if upgrade {
					return fmt.Errorf("making governance retention compliance (needs s3:BypassGovernanceRetention): %w", s3Err(err))
				}
				return s3Err(err)
			}
		}
		if l.LegalHold && !had.LegalHold {
			_, err := b.client.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: bucket, Key: k,
				LegalHold:         &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOn},
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
			if err != nil {
				return s3Err(err)
			}
		}
		return nil
	})
}
