// Package s3 is the backend for S3 and S3-compatible object stores.
package s3

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Backend stores objects in an S3 bucket (AWS or any S3-compatible server).
// Credentials come from the standard AWS chain (environment, shared files, IMDS,
// web identity...); see TakeEnvCredentials. The SDK's own retries are off: the retrying wrapper is the
// single place where requests are retried, logged and counted.
type Backend struct {
	client       *s3.Client
	bucket       string
	prefix       string
	sse          types.ServerSideEncryption
	kmsKeyID     string
	storageClass types.StorageClass
	desc         string
	endpoint     string // endpoint and region: backends with the same copy server-side
	maxCopy      int64  // the largest object one CopyObject copies
	copyPart     int64  // the range of one UploadPartCopy above that
}

// Config is where and how the backend stores objects.
type Config struct {
	Endpoint       string // empty: AWS
	Region         string
	Bucket         string
	Prefix         string
	ForcePathStyle bool
	SSE            string // "", AES256, aws:kms, aws:kms:dsse
	SSEKMSKeyID    string
	StorageClass   string

	// MaxCopyObject is the largest object a server-side copy moves with one
	// CopyObject (0: S3's limit, 5 GB); a larger one is copied by
	// UploadPartCopy in ranges of CopyPartSize (0: 1 GiB).
	MaxCopyObject int64
	CopyPartSize  int64
}

// New returns the backend for c. Credentials are those TakeEnvCredentials
// took, or else the SDK's default chain.
func New(ctx context.Context, c Config) (*Backend, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(c.Region)}
	if p := takenCredentials(); p != nil {
		opts = append(opts, config.WithCredentialsProvider(p))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, backend.Permanent(fmt.Errorf("loading AWS configuration: %w", err))
	}
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.ForcePathStyle
		o.HTTPClient = backend.NewHTTPClient(listing)
	})
	b := &Backend{
		client:       client,
		bucket:       c.Bucket,
		prefix:       backend.NormPrefix(c.Prefix),
		sse:          types.ServerSideEncryption(c.SSE),
		kmsKeyID:     c.SSEKMSKeyID,
		storageClass: types.StorageClass(c.StorageClass),
		maxCopy:      c.MaxCopyObject,
		copyPart:     c.CopyPartSize,
	}
	if b.maxCopy <= 0 {
		b.maxCopy = maxCopyObject
	}
	if b.copyPart <= 0 {
		b.copyPart = 1 << 30
	}
	ep := c.Endpoint
	if ep == "" {
		ep = "aws"
	}
	b.desc = fmt.Sprintf("s3:%s/%s/%s", ep, c.Bucket, b.prefix)
	b.endpoint = ep + "|" + c.Region
	return b, nil
}

// objectSettings are what every object written gets: server-side
// encryption, its KMS key, the storage class (empty: the bucket's defaults).
func (b *Backend) objectSettings() (types.ServerSideEncryption, *string, types.StorageClass) {
	var kms *string
	if b.sse != "" && b.kmsKeyID != "" {
		kms = aws.String(b.kmsKeyID)
	}
	return b.sse, kms, b.storageClass
}

func (b *Backend) String() string { return b.desc }
func (b *Backend) Close() error   { return nil }

func crc32cBase64(sum uint32) string {
	var buf [4]byte
	binary.BigEndian.PutUint32(buf[:], sum)
	return base64.StdEncoding.EncodeToString(buf[:])
}

func s3Err(err error) error {
	if err == nil {
		return nil
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return fmt.Errorf("%w: %v", backend.ErrNotExist, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("%w: %v", backend.ErrNotExist, err)
		case "PreconditionFailed", "ConditionalRequestConflict":
			return fmt.Errorf("%w: %v", backend.ErrExists, err)
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled", "ExpiredToken", "InvalidToken":
			return backend.Denied(err)
		}
	}
	var hs backend.HTTPStatusError
	if errors.As(err, &hs) {
		switch hs.HTTPStatusCode() {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %v", backend.ErrNotExist, err)
		case http.StatusPreconditionFailed:
			return fmt.Errorf("%w: %v", backend.ErrExists, err)
		case http.StatusUnauthorized, http.StatusForbidden:
			return backend.Denied(err)
		}
	}
	return err
}

func (b *Backend) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts backend.PutOptions) error {
	in := &s3.PutObjectInput{
		Bucket:            aws.String(b.bucket),
		Key:               aws.String(b.prefix + key),
		Body:              r,
		ContentLength:     aws.Int64(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
		ChecksumCRC32C:    aws.String(crc32cBase64(opts.CRC32C)),
	}
	if opts.IfNotExists {
		in.IfNoneMatch = aws.String("*")
	}
	in.ServerSideEncryption, in.SSEKMSKeyId, in.StorageClass = b.objectSettings()
	lockHeaders(in, opts.Lock)
	_, err := b.client.PutObject(ctx, in)
	return s3Err(err)
}

func (b *Backend) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.prefix + key)}
	switch {
	case length == 0:
		return io.NopCloser(strings.NewReader("")), nil
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		return nil, s3Err(err)
	}
	return out.Body, nil
}

func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.prefix + key)})
	if err != nil {
		return backend.ObjectInfo{}, s3Err(err)
	}
	return backend.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), Modified: aws.ToTime(out.LastModified)}, nil
}

func (b *Backend) List(ctx context.Context, prefix string, dirs bool) ([]backend.ObjectInfo, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(b.prefix + prefix)}
	if dirs {
		in.Delimiter = aws.String("/")
	}
	var out []backend.ObjectInfo
	p := s3.NewListObjectsV2Paginator(b.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s3Err(err)
		}
		backend.Progress(ctx)
		for _, o := range page.Contents {
			out = append(out, backend.ObjectInfo{Key: strings.TrimPrefix(aws.ToString(o.Key), b.prefix), Size: aws.ToInt64(o.Size),
				Modified: aws.ToTime(o.LastModified)})
		}
		for _, cp := range page.CommonPrefixes {
			out = append(out, backend.ObjectInfo{Key: strings.TrimPrefix(aws.ToString(cp.Prefix), b.prefix), Dir: true})
		}
	}
	backend.SortInfos(out)
	return out, nil
}

func (b *Backend) Delete(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.prefix + key)})
	err = s3Err(err)
	if errors.Is(err, backend.ErrNotExist) {
		return nil
	}
	return err
}

// listing says which requests list objects (billed as writes): ListObjectsV2,
// ListObjectVersions, ListMultipartUploads.
func listing(r *http.Request) bool {
	q := r.URL.Query()
	return r.Method == http.MethodGet && (q.Has("list-type") || q.Has("versions") || q.Has("uploads"))
}
