package local

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Name selects this backend: --split-storage-backend=file.
const Name = "file"

const flagRoot = "split-storage-root"

// Config is the file backend's settings: the directory that holds the objects.
type Config struct {
	Root string
}

var _ backend.LocalDir = (*Config)(nil)

func (c *Config) Kind() string { return Name }

func (c *Config) Defaults() { *c = Config{} }

func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	backend.StringFlag(fs, &c.Root, flagRoot, "must be set when "+backend.Selected(Name), "root directory of the file backend; never inside a tablet's data, InnoDB or log directories, which its restore clears (a backup into such a root, or a restore from it, is refused).")
}

func (c *Config) Check(selected bool, p *flagvalue.Problems) {
	if selected {
		p.Required(flagRoot, c.Root, backend.Selected(Name))
	}
}

func (c *Config) Location() string { return c.Root }

func (c *Config) Dir() string { return c.Root }

func (c *Config) Open(_ context.Context) (backend.Backend, error) {
	b, err := New(c.Root)
	if err != nil {
		return nil, err
	}
	return b, nil
}
