package s3

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// maxCopyObject is the largest object one CopyObject request copies.
const maxCopyObject = 5_000_000_000

// CopyFrom copies an object of a bucket on the same S3 endpoint without its
// bytes passing through this process: with CopyObject, or, above 5 GB
// (parts go up to 5 GiB), with a multipart upload of UploadPartCopy ranges.
// The server computes the CRC32C of a CopyObject copy; either way the
// verification after the copy reads every part back and checks it.
func (b *Backend) CopyFrom(ctx context.Context, src backend.Backend, key string, size int64, opts backend.PutOptions) (bool, error) {
	sb, ok := src.(*Backend)
	if !ok || sb.endpoint != b.endpoint {
		return false, nil
	}
	source := aws.String(url.PathEscape(sb.bucket + "/" + sb.prefix + key))
	if size > b.maxCopy {
		if err := b.copyInParts(ctx, source, key, size, opts.Lock); err != nil {
			return false, fmt.Errorf("server-side copy from %s (in parts): %w", sb, err)
		}
		return true, nil
	}
	in := &s3.CopyObjectInput{
		Bucket:            aws.String(b.bucket),
		Key:               aws.String(b.prefix + key),
		CopySource:        source,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
	}
	in.ServerSideEncryption, in.SSEKMSKeyId, in.StorageClass = b.objectSettings()
	in.ObjectLockMode, in.ObjectLockRetainUntilDate, in.ObjectLockLegalHoldStatus = copyLock(opts.Lock)
	if _, err := b.client.CopyObject(ctx, in); err != nil {
		return false, fmt.Errorf("server-side copy from %s: %w", sb, s3Err(err))
	}
	return true, nil
}

// copyInParts copies source into key with one multipart upload of
// UploadPartCopy ranges; on any failure the upload is aborted, so no part
// is left stored (and billed) behind.
func (b *Backend) copyInParts(ctx context.Context, source *string, key string, size int64, lock backend.Lock) (err error) {
	bucket, dst := aws.String(b.bucket), aws.String(b.prefix+key)
	in := &s3.CreateMultipartUploadInput{Bucket: bucket, Key: dst}
	in.ServerSideEncryption, in.SSEKMSKeyId, in.StorageClass = b.objectSettings()
	in.ObjectLockMode, in.ObjectLockRetainUntilDate, in.ObjectLockLegalHoldStatus = copyLock(lock)
	up, err := b.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return s3Err(err)
	}
	defer func() {
		if err != nil {
			_, _ = b.client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: bucket, Key: dst, UploadId: up.UploadId})
		}
	}()
	var parts []types.CompletedPart
	for n, off := int32(1), int64(0); off < size; n, off = n+1, off+b.copyPart {
		r, err := b.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket: bucket, Key: dst, UploadId: up.UploadId, PartNumber: aws.Int32(n),
			CopySource: source, CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, min(off+b.copyPart, size)-1)),
		})
		if err != nil {
			return fmt.Errorf("part %d: %w", n, s3Err(err))
		}
		if r.CopyPartResult == nil {
			return fmt.Errorf("part %d: no ETag in the answer", n)
		}
		parts = append(parts, types.CompletedPart{ETag: r.CopyPartResult.ETag, PartNumber: aws.Int32(n)})
	}
	_, err = b.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: bucket, Key: dst, UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	return s3Err(err)
}
