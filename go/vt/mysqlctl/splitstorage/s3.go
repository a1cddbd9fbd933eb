package splitstorage

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
)

// s3Backend stores objects in an S3 bucket (AWS or any S3-compatible server).
// Credentials come from the standard AWS chain (environment, shared files, IMDS,
// web identity...); see TakeEnvCredentials. The SDK's own retries are off: the retrying wrapper is the
// single place where requests are retried, logged and counted.
type s3Backend struct {
	client       *s3.Client
	bucket       string
	prefix       string
	sse          types.ServerSideEncryption
	kmsKeyID     string
	storageClass types.StorageClass
	desc         string
	endpoint     string // endpoint and region: backends with the same copy server-side
}

func newS3Backend(ctx context.Context, c Config) (*s3Backend, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(c.S3Region)}
	if p := takenCredentials(); p != nil {
		opts = append(opts, config.WithCredentialsProvider(p))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, permanent(fmt.Errorf("loading AWS configuration: %w", err))
	}
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.S3Endpoint != "" {
			o.BaseEndpoint = aws.String(c.S3Endpoint)
		}
		o.UsePathStyle = c.S3ForcePathStyle
		o.HTTPClient = newHTTPClient()
	})
	b := &s3Backend{
		client:       client,
		bucket:       c.S3Bucket,
		prefix:       normPrefix(c.S3Prefix),
		sse:          types.ServerSideEncryption(c.S3SSE),
		kmsKeyID:     c.S3SSEKMSKeyID,
		storageClass: types.StorageClass(c.S3StorageClass),
	}
	ep := c.S3Endpoint
	if ep == "" {
		ep = "aws"
	}
	b.desc = fmt.Sprintf("s3:%s/%s/%s", ep, c.S3Bucket, b.prefix)
	b.endpoint = ep + "|" + c.S3Region
	return b, nil
}

// newHTTPClient returns a client with enough idle connections for parallel parts.
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	t.DisableCompression = true
	return &http.Client{Transport: t}
}

func normPrefix(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return ""
	}
	return p + "/"
}

func (b *s3Backend) String() string { return b.desc }
func (b *s3Backend) Close() error   { return nil }

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
		return fmt.Errorf("%w: %v", ErrNotExist, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("%w: %v", ErrNotExist, err)
		case "PreconditionFailed", "ConditionalRequestConflict":
			return fmt.Errorf("%w: %v", ErrExists, err)
		}
	}
	var hs httpStatusError
	if errors.As(err, &hs) {
		switch hs.HTTPStatusCode() {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %v", ErrNotExist, err)
		case http.StatusPreconditionFailed:
			return fmt.Errorf("%w: %v", ErrExists, err)
		}
	}
	return err
}

func (b *s3Backend) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts PutOptions) error {
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
	if b.sse != "" {
		in.ServerSideEncryption = b.sse
		if b.kmsKeyID != "" {
			in.SSEKMSKeyId = aws.String(b.kmsKeyID)
		}
	}
	if b.storageClass != "" {
		in.StorageClass = b.storageClass
	}
	_, err := b.client.PutObject(ctx, in)
	return s3Err(err)
}

func (b *s3Backend) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
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

func (b *s3Backend) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.prefix + key)})
	if err != nil {
		return ObjectInfo{}, s3Err(err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength)}, nil
}

func (b *s3Backend) List(ctx context.Context, prefix string, dirs bool) ([]ObjectInfo, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(b.prefix + prefix)}
	if dirs {
		in.Delimiter = aws.String("/")
	}
	var out []ObjectInfo
	p := s3.NewListObjectsV2Paginator(b.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s3Err(err)
		}
		for _, o := range page.Contents {
			out = append(out, ObjectInfo{Key: strings.TrimPrefix(aws.ToString(o.Key), b.prefix), Size: aws.ToInt64(o.Size)})
		}
		for _, cp := range page.CommonPrefixes {
			out = append(out, ObjectInfo{Key: strings.TrimPrefix(aws.ToString(cp.Prefix), b.prefix), Dir: true})
		}
	}
	sortInfos(out)
	return out, nil
}

func (b *s3Backend) Delete(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.prefix + key)})
	err = s3Err(err)
	if errors.Is(err, ErrNotExist) {
		return nil
	}
	return err
}
