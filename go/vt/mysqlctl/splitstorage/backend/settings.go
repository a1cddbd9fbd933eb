package backend

import (
	"context"
	"net/url"

	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/utils"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// Settings is one kind of backend's configuration, owned by the kind's
// package: its flags and their checks, where it keeps objects, and how to
// open it. The split storage's Config holds the settings of every kind (its
// fields of this type are the list of backends) and opens the one that
// --split-storage-backend names.
type Settings interface {
	// Kind is the name --split-storage-backend selects the backend by.
	Kind() string
	// Defaults sets the defaults of the kind's flags.
	Defaults()
	// RegisterFlags declares the kind's flags in fs, bound to the settings,
	// and documents their allowed values (flagvalue.Document).
	RegisterFlags(fs *pflag.FlagSet)
	// Check adds what is wrong with the settings to p, naming each flag and
	// its allowed values. What the kind needs is required only when it is
	// selected; a value no backend accepts is wrong whichever is selected.
	Check(selected bool, p *flagvalue.Problems)
	// Location names where the backend keeps objects, for messages: a
	// directory, or a URL with bucket and prefix (never a credential).
	Location() string
	// Open returns the backend; errors that no retry fixes are Permanent.
	Open(ctx context.Context) (Backend, error)
}

// What a kind knows that the split storage may use, asked of its Settings
// where the kind has it (restic's optional interfaces): nothing outside the
// kind's package switches on its name.

// LocalDir is the Settings of a kind that keeps its objects in a directory
// of this host: a root that does not exist is an error rather than an empty
// listing, and the spool can link parts into it rather than copy them.
type LocalDir interface {
	Settings
	// Dir is the directory; "" when unset.
	Dir() string
}

// Served is the Settings of a kind whose store is a service at an
// endpoint: two settings with one location (bucket and prefix) at two
// endpoints are two stores.
type Served interface {
	Settings
	// ServiceEndpoint is the endpoint; "" for the service's own.
	ServiceEndpoint() string
}

// EnvCredentials is the Settings of a kind that takes its credentials out
// of the process environment at startup, so that no child inherits them and
// no log line shows them. legacy is the Vitess storage named beside the
// split storage (--split-storage-legacy): where it reads the same
// credentials from the environment, they are shared with it through a
// private file under tmp, which remove deletes.
type EnvCredentials interface {
	Settings
	TakeEnvCredentials(legacy, tmp string) (remove func(), err error)
}

// CheckEndpoint adds a problem to p when v, the value of --flag, is set and
// is not an http:// or https:// URL with a host.
func CheckEndpoint(p *flagvalue.Problems, flag, v, allowed string) {
	if v == "" {
		return
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.Invalid(flag, v, allowed)
	}
}

// Selected is how Check's "required" problems name the condition.
func Selected(kind string) string { return "--split-storage-backend=" + kind }

// StringFlag declares the string flag name in fs, bound to p with *p as its
// default, its help after the storage's prefix, and documents its allowed
// values ("" when any value is).
func StringFlag(fs *pflag.FlagSet, p *string, name, allowed, usage string) {
	utils.SetFlagStringVar(fs, p, name, *p, "split backup storage: "+usage)
	flagvalue.Document(name, allowed)
}
