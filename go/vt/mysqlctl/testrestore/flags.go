package testrestore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/shlex"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// Flags are the settings of a test restore as flags, declared once for
// every command: `vtfifo test-restore` names them bare (--scratch-dir),
// vtbackup with its prefix (--fifo-backup-test-restore-scratch-dir).
type Flags struct {
	prefix      string
	scratch     string
	mysqld      string
	mysqldFlags string
	defaults    string
	bufferPool  int64
	timeout     time.Duration
	parsed      []string
}

// Register declares the flags in fs, each name preceded by prefix.
func (f *Flags) Register(fs *pflag.FlagSet, prefix string) {
	f.prefix, f.bufferPool, f.timeout = prefix, 128<<20, 15*time.Minute
	fs.StringVar(&f.scratch, prefix+"scratch-dir", "", "directory under which the test restore's scratch data directory is made (it needs room for "+
		"the restored backup); empty: $TMPDIR or /tmp")
	fs.StringVar(&f.mysqld, prefix+"mysqld-path", "", "the server binary of the test restore; empty looks for mysqld, then mariadbd, under "+
		"$VT_MYSQL_ROOT, in PATH and /usr/sbin")
	fs.StringVar(&f.mysqldFlags, prefix+"mysqld-flags", "", "extra flags for the test restore's throwaway mysqld, split like a shell would (e.g. "+
		"--innodb-log-file-size=1G); a run that fails with them is run again without them, and passing so, ends as a usage error, not a "+
		"failed backup; a MySQL 8 data dictionary's lower_case_table_names is taken from its refusal to start with another")
	fs.StringVar(&f.defaults, prefix+"defaults-file", "", "the restoring host's option file: where its encryption plugin and keys are "+
		"(plugin_dir, file_key_management_filename in [mysqld]), which the prepare and the throwaway mysqld take over the backup's own; "+
		"empty: the backup's (the source server's paths)")
	fs.Var(flagvalue.Size{P: &f.bufferPool, Allowed: allowedBufferPool}, prefix+"buffer-pool-size", "the test restore's mysqld --innodb-buffer-pool-size")
	fs.Var(flagvalue.Duration{P: &f.timeout, Allowed: allowedStartTimeout}, prefix+"start-timeout", "how long the test restore's mysqld may take to "+
		"start on the restored files (crash recovery included)")
	for name, allowed := range map[string]string{
		"buffer-pool-size": allowedBufferPool, "start-timeout": allowedStartTimeout,
		"scratch-dir": allowedScratch, "mysqld-flags": allowedMysqldFlags, "defaults-file": allowedDefaults,
	} {
		flagvalue.Document(prefix+name, allowed)
	}
}

// The allowed values Validate names.
const (
	allowedBufferPool   = "8MiB..1TiB"
	allowedStartTimeout = "1s or more"
	allowedScratch      = "an absolute directory path"
	allowedMysqldFlags  = "flags that each start with --, split like a shell would"
	allowedDefaults     = "a readable option file"
)

// Validate checks the parsed values; an error names the flag and what it
// allows.
func (f *Flags) Validate() error {
	bad := func(name, value, allowed string) error {
		return fmt.Errorf("invalid value %q for --%s%s: allowed values are %s", value, f.prefix, name, allowed)
	}
	if f.bufferPool < 8<<20 || f.bufferPool > 1<<40 {
		return bad("buffer-pool-size", flagvalue.FormatSize(f.bufferPool), allowedBufferPool)
	}
	if f.timeout < time.Second {
		return bad("start-timeout", f.timeout.String(), allowedStartTimeout)
	}
	if f.scratch != "" && !filepath.IsAbs(f.scratch) {
		return bad("scratch-dir", f.scratch, allowedScratch)
	}
	if f.defaults != "" {
		if _, err := os.ReadFile(f.defaults); err != nil {
			return bad("defaults-file", f.defaults, allowedDefaults+" ("+err.Error()+")")
		}
	}
	flags, err := shlex.Split(f.mysqldFlags)
	if err != nil {
		return bad("mysqld-flags", f.mysqldFlags, allowedMysqldFlags+" ("+err.Error()+")")
	}
	for _, fl := range flags {
		if !strings.HasPrefix(fl, "--") {
			return bad("mysqld-flags", f.mysqldFlags, allowedMysqldFlags)
		}
	}
	f.parsed = flags
	return nil
}

// ScratchExists checks that --scratch-dir, where given, names a directory
// now: for a command that runs the test restore at once (vtfifo
// test-restore). Validate does not ask it: vtbackup's may be made by the
// time its test restore runs (under the VTDATAROOT it initializes).
func (f *Flags) ScratchExists() error {
	if f.scratch == "" {
		return nil
	}
	fi, err := os.Stat(f.scratch)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a directory", f.scratch)
	}
	if err != nil {
		return fmt.Errorf("invalid value %q for --%sscratch-dir: allowed values are %s that exists (%v)", f.scratch, f.prefix, allowedScratch, err)
	}
	return nil
}

// ScratchDir is --scratch-dir as given ("": $TMPDIR).
func (f *Flags) ScratchDir() string { return f.scratch }

// Options are Run's options from the validated flags; the restore reads
// the engine's flags (compression, lanes, tool).
func (f *Flags) Options(logger logutil.Logger) Options {
	return Options{
		Restore:       fifobackupengine.RestoreDirOptions{Config: fifobackupengine.FlagConfig(), DefaultsFile: f.defaults},
		ScratchParent: f.scratch,
		MysqldPath:    f.mysqld,
		MysqldFlags:   f.parsed,
		BufferPool:    f.bufferPool,
		StartTimeout:  f.timeout,
		Logger:        logger,
	}
}
