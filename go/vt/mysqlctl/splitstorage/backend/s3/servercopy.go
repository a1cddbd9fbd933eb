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

// maxS3CopyObject is the largest object one CopyObject request copies.
const maxS3CopyObject = 5_000_000_000

// CopyFrom copies an object of a bucket on the same S3 endpoint with
// CopyObject: the server moves the bytes, and computes the CRC32C of the
// copy, which the verification after the copy checks.
func (b *Backend) CopyFrom(ctx context.Context, src backend.Backend, key string, size int64, opts backend.PutOptions) (bool, error) {
	sb, ok := src.(*Backend)
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
