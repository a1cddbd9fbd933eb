package s3

import (
	"context"
	"path"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Name selects this backend: --split-storage-backend=s3.
const Name = "s3"

const (
	flagEndpoint = "split-storage-s3-endpoint"
	flagSSE      = "split-storage-s3-sse"
	flagKMSKeyID = "split-storage-s3-sse-kms-key-id"

	allowedEndpoint = "empty (AWS) or an http:// or https:// URL with a host"
	allowedSSE      = "empty, AES256, aws:kms, aws:kms:dsse"
	allowedKMSKeyID = "empty unless --split-storage-s3-sse is aws:kms or aws:kms:dsse"
)

var _ backend.EnvCredentials = (*Config)(nil)

func (c *Config) Kind() string { return Name }

func (c *Config) Defaults() { *c = Config{Region: "us-east-1"} }

func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	str := func(p *string, name, allowed, usage string) { backend.StringFlag(fs, p, name, allowed, usage) }
	required := "must be set when " + backend.Selected(Name)
	str(&c.Endpoint, flagEndpoint, allowedEndpoint, "S3 endpoint URL, http:// or https:// (empty: AWS).")
	str(&c.Region, "split-storage-s3-region", required, "S3 region.")
	str(&c.Bucket, "split-storage-s3-bucket", required, "S3 bucket.")
	str(&c.Prefix, "split-storage-s3-prefix", "", "key prefix inside the S3 bucket.")
	flagvalue.BoolVar(fs, &c.ForcePathStyle, "split-storage-s3-force-path-style", c.ForcePathStyle,
		"split backup storage: use path-style S3 URLs (most S3-compatible servers).")
	str(&c.SSE, flagSSE, allowedSSE, "S3 server-side encryption: empty, AES256, aws:kms or aws:kms:dsse.")
	str(&c.SSEKMSKeyID, flagKMSKeyID, allowedKMSKeyID, "KMS key id for --split-storage-s3-sse=aws:kms.")
	str(&c.StorageClass, "split-storage-s3-storage-class", "", "S3 storage class of the objects (e.g. STANDARD_IA); empty: the bucket's default.")
}

func (c *Config) Check(selected bool, p *flagvalue.Problems) {
	if selected {
		p.Required("split-storage-s3-bucket", c.Bucket, backend.Selected(Name))
		p.Required("split-storage-s3-region", c.Region, backend.Selected(Name))
	}
	switch c.SSE {
	case "", "AES256", "aws:kms", "aws:kms:dsse":
	default:
		p.Invalid(flagSSE, c.SSE, allowedSSE)
	}
	if c.SSEKMSKeyID != "" && !strings.HasPrefix(c.SSE, "aws:kms") {
		p.Invalid(flagKMSKeyID, c.SSEKMSKeyID, allowedKMSKeyID)
	}
	backend.CheckEndpoint(p, flagEndpoint, c.Endpoint, allowedEndpoint)
}

func (c *Config) Location() string { return "s3://" + path.Join(c.Bucket, c.Prefix) }

// ServiceEndpoint is the S3 endpoint and region the location is at.
func (c *Config) ServiceEndpoint() string { return c.Endpoint + "|" + c.Region }

func (c *Config) Open(ctx context.Context) (backend.Backend, error) {
	b, err := New(ctx, *c)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// TakeEnvCredentials takes the AWS credentials out of the environment
// (TakeEnvCredentials, the package's), and shares them through a file under
// tmp where the legacy storage is Vitess's s3 one, which reads them the
// SDK's default way.
func (c *Config) TakeEnvCredentials(legacy, tmp string) (remove func(), err error) {
	if !TakeEnvCredentials() || legacy != "s3" {
		return func() {}, nil
	}
	remove, _, err = ShareTakenCredentials(tmp)
	return remove, err
}
