package gcs

import (
	"context"
	"path"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Name selects this backend: --split-storage-backend=gcs.
const Name = "gcs"

const flagBucket = "split-storage-gcs-bucket"

var _ backend.Settings = (*Config)(nil)

func (c *Config) Kind() string { return Name }

func (c *Config) Defaults() { *c = Config{} }

func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	backend.StringFlag(fs, &c.Bucket, flagBucket, "must be set when "+backend.Selected(Name),
		"GCS bucket (STORAGE_EMULATOR_HOST is honoured).")
	backend.StringFlag(fs, &c.Prefix, "split-storage-gcs-prefix", "", "object name prefix inside the GCS bucket.")
}

func (c *Config) Check(selected bool, p *flagvalue.Problems) {
	if selected {
		p.Required(flagBucket, c.Bucket, backend.Selected(Name))
	}
}

func (c *Config) Location() string { return "gs://" + path.Join(c.Bucket, c.Prefix) }

func (c *Config) Open(ctx context.Context) (backend.Backend, error) {
	b, err := New(ctx, *c)
	if err != nil {
		return nil, err
	}
	return b, nil
}
