package azure

import (
	"context"
	"path"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Name selects this backend: --split-storage-backend=azure.
const Name = "azure"

const (
	flagAccount   = "split-storage-azure-account"
	flagContainer = "split-storage-azure-container"
	flagKeyFile   = "split-storage-azure-key-file"
	flagEndpoint  = "split-storage-azure-endpoint"

	allowedEndpoint = "empty (https://<account>.blob.core.windows.net/) or an http:// or https:// URL with a host"
)

var _ backend.Settings = (*Config)(nil)

func (c *Config) Kind() string { return Name }

func (c *Config) Defaults() { *c = Config{} }

func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	str := func(p *string, name, allowed, usage string) { backend.StringFlag(fs, p, name, allowed, usage) }
	required := "must be set when " + backend.Selected(Name)
	str(&c.Account, flagAccount, required, "Azure storage account name.")
	str(&c.Container, flagContainer, required, "Azure blob container.")
	str(&c.Prefix, "split-storage-azure-prefix", "", "blob name prefix inside the Azure container.")
	str(&c.Endpoint, flagEndpoint, allowedEndpoint,
		"Azure blob service URL, http:// or https:// (empty: https://<account>.blob.core.windows.net/).")
	str(&c.KeyFile, flagKeyFile, required,
		"file holding the storage account's shared key (read at startup; the key never goes in a flag).")
}

func (c *Config) Check(selected bool, p *flagvalue.Problems) {
	if selected {
		p.Required(flagAccount, c.Account, backend.Selected(Name))
		p.Required(flagContainer, c.Container, backend.Selected(Name))
		p.Required(flagKeyFile, c.KeyFile, backend.Selected(Name))
	}
	backend.CheckEndpoint(p, flagEndpoint, c.Endpoint, allowedEndpoint)
}

func (c *Config) Location() string {
	return "azure://" + path.Join(c.Account, path.Join(c.Container, c.Prefix))
}

// ServiceEndpoint is the blob service endpoint the location is at.
func (c *Config) ServiceEndpoint() string { return c.Endpoint }

func (c *Config) Open(_ context.Context) (backend.Backend, error) {
	b, err := New(*c)
	if err != nil {
		return nil, err
	}
	return b, nil
}
