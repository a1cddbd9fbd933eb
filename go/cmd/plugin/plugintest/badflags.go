// Package plugintest holds the table of the plugin flags and the values each must refuse at
// startup. Two tests share it: the unit test of the startup validation (go/cmd/plugin, flags
// parsed and validated in process) and the end-to-end test of the built binaries
// (test/endtoend, one process per case). In both, every case must stop startup with an error
// that names the flag and its allowed values, and every flag the plugins register must be in
// the table, as constrained (with bad values) or as free (with the reason it accepts anything).
package plugintest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// Flag is one plugin flag and what it accepts.
type Flag struct {
	Name string // without the dashes
	// Allowed is the text every error about a bad value of the flag contains: its allowed
	// values or range, as Validate and the flag's parser write them.
	Allowed string
	// Bad are values the binaries refuse at startup; each is one case, after With.
	Bad []string
	// With are the flags under which the rule applies (e.g. --split-storage-backend=s3).
	With []string
	// Free, for a flag without a constraint, says why any value is accepted at startup.
	Free string
}

// Case is one refused startup: Args stop the process with an error naming --Flag and Allowed.
type Case struct {
	Name    string // unique, usable as a subtest name
	Flag    string // the flag the error names, without the dashes
	Allowed string
	Args    []string // after BaseArgs
}

// BaseArgs come first in every case: the split storage is the configured storage (its flags
// are only validated then) with a root that is never created, so that the defaults of every
// other flag are valid and only the case's flag is wrong.
var BaseArgs = []string{"--backup-storage-implementation=split", "--split-storage-root=/nonexistent/vtfifo-badflags"}

// Flags is every flag the fifo engine and the split storage register.
var Flags = []Flag{
	// The fifo backup engine (go/vt/mysqlctl/fifobackupengine/flags.go).
	{Name: "fifo-backup-lanes", Allowed: "0 (auto) or 1..64", Bad: []string{"65", "-1", "abc", "1.5", "99999999999999999999"}},
	{Name: "fifo-backup-source", Allowed: "auto, fifo, stdout", Bad: []string{"pipe", "", "FIFO"}},
	{Name: "fifo-backup-tool-flavor", Allowed: "xtrabackup, mariabackup", Bad: []string{"percona", "XtraBackup", "mysqlbackup"}},
	{Name: "fifo-backup-parallel", Allowed: "1..256", Bad: []string{"0", "257", "-4", "abc"}},
	{Name: "fifo-backup-fifo-streams", Allowed: "0 (as many as --fifo-backup-lanes) or 1..64", Bad: []string{"65", "-1", "abc", "1.5"}},
	{Name: "fifo-backup-read-buffer-size", Allowed: "0 (tool default, 10MiB) or 128KiB..64MiB in steps of 64KiB",
		Bad: []string{"65MiB", "1073741825", "2GiB", "64KiB", "1000000", "-1", "-8MiB", "abc", "8XB"}},
	{Name: "fifo-backup-fifo-timeout", Allowed: "2s..1h", Bad: []string{"0", "999ms", "1s", "1h0m1s", "2h", "-1s", "abc", "10"}},
	{Name: "fifo-backup-use-memory", Allowed: "0 (tool default) or a size up to 1PiB", Bad: []string{"1125899906842625", "2PiB", "-1", "lots"}},
	{Name: "fifo-backup-progress-interval", Allowed: "0 (off) or a positive duration", Bad: []string{"-1s", "abc", "5"}},
	{Name: "fifo-backup-full-interval", Allowed: "0 (off: every backup is full) or 1m..8760h", Bad: []string{"30s", "-1h", "8761h", "abc", "7"}},
	{Name: "fifo-backup-incremental-base", Allowed: "full, latest", Bad: []string{"previous", "", "Latest"}},
	{Name: "fifo-backup-max-chain-length", Allowed: "1..1000", Bad: []string{"0", "1001", "-1", "abc"}},
	{Name: "fifo-backup-external-tablespace-dirs", Allowed: "absolute, clean directory paths, comma-separated",
		Bad: []string{"relative/dir", "/a/../b", "/ok,rel", "/trailing/"}},
	{Name: "fifo-backup-backup-flags", Allowed: "split like a shell would (balanced quotes, no trailing backslash)",
		Bad: []string{`--compress="unterminated`, `--x \`}},
	{Name: "fifo-backup-prepare-flags", Allowed: "split like a shell would (balanced quotes, no trailing backslash)", Bad: []string{`'`, `--use-memory="1G`}},
	{Name: "fifo-backup-tool-path", Free: "any path: a missing tool is found at the first backup (the tablet may get it later); empty looks it up in PATH"},
	{Name: "fifo-backup-user", Free: "any MySQL user name; empty uses --db-dba-user"},
	{Name: "fifo-backup-fifo-dir", Free: "any directory; the tool creates the FIFOs under it at the backup, empty uses the tablet's tmp dir"},

	// vtbackup's test restore after each backup (go/cmd/plugin/testrestoreplugin, go/vt/mysqlctl/testrestore/flags.go).
	{Name: "fifo-backup-test-restore", Allowed: "true, false", Bad: []string{"yes", "abc"}},
	{Name: "fifo-backup-test-restore-scratch-dir", Allowed: "an absolute directory path", Bad: []string{"relative/dir", "tmp"}},
	{Name: "fifo-backup-test-restore-mysqld-flags", Allowed: "flags that each start with --, split like a shell would",
		Bad: []string{"-x", "skip-grant-tables", `--x="unterminated`}},
	{Name: "fifo-backup-test-restore-buffer-pool-size", Allowed: "8MiB..1TiB", Bad: []string{"4MiB", "2TiB", "0", "-1", "abc"}},
	{Name: "fifo-backup-test-restore-start-timeout", Allowed: "1s or more", Bad: []string{"0", "500ms", "-1s", "abc"}},
	{Name: "fifo-backup-test-restore-mysqld-path", Free: "any path: the server is looked up when the test restore runs"},
	{Name: "fifo-backup-test-restore-defaults-file", Allowed: "a readable option file", Bad: []string{"/nonexistent/my.cnf"}},
	// vtbackup's promotion after a passed test restore (go/cmd/plugin/testrestoreplugin/promote.go).
	{Name: "fifo-backup-promote-to", Allowed: "--split-storage-* flags that make another storage than vtbackup's own",
		Bad:  []string{"--nope", "--split-storage-part-size=1", "--split-storage-upload-concurrency=2"},
		With: []string{"--fifo-backup-test-restore", "--fifo-backup-promote-lock-for=720h"}},
	{Name: "fifo-backup-promote-lock-for", Allowed: "24h..876000h (a day to 100 years)", Bad: []string{"1h", "-1h", "abc"},
		With: []string{"--fifo-backup-test-restore", "--fifo-backup-promote-to=--split-storage-root=/nonexistent/protected"}},
	{Name: "fifo-backup-promote-lock-mode", Allowed: "governance or compliance", Bad: []string{"strict", ""},
		With: []string{"--fifo-backup-test-restore", "--fifo-backup-promote-to=--split-storage-root=/nonexistent/protected", "--fifo-backup-promote-lock-for=720h"}},

	// The split backup storage (go/vt/mysqlctl/splitstorage/config.go).
	{Name: "split-storage-backend", Allowed: "file, s3, gcs, azure", Bad: []string{"tape", "", "S3", "azblob"}},
	{Name: "split-storage-legacy", Allowed: "empty, or one of the Vitess storages this binary links: ", Bad: []string{"split", "tape", "S3"}},
	{Name: "split-storage-root", Allowed: "must be set when --split-storage-backend=file", Bad: []string{""}, With: []string{"--split-storage-backend=file"}},
	{Name: "split-storage-part-size", Allowed: "1MiB..5GiB", Bad: []string{"0", "1048575", "512KiB", "5368709121", "6GiB", "-1", "-1MiB", "abc"}},
	{Name: "split-storage-memory-budget", Allowed: "a size >= 0", Bad: []string{"abc", "-1", "-2GiB"}},
	{Name: "split-storage-spool-dir", Allowed: "an existing directory", Bad: []string{"/nonexistent/vtfifo-spool"}},
	{Name: "split-storage-upload-concurrency", Allowed: "1..256", Bad: []string{"0", "257", "-1", "abc"}},
	{Name: "split-storage-read-ahead", Allowed: "1MiB..1GiB", Bad: []string{"0", "2", "2GiB", "-1", "abc"}},
	{Name: "split-storage-upload-limit", Allowed: "0 (no limit) or 1MiB..1TiB (bytes per second)", Bad: []string{"1KiB", "100", "2TiB", "-1", "abc"}},
	{Name: "split-storage-download-limit", Allowed: "0 (no limit) or 1MiB..1TiB (bytes per second)", Bad: []string{"512KiB", "2TiB", "-1MiB", "abc"}},
	{Name: "split-storage-retry-max-attempts", Allowed: "1..100", Bad: []string{"0", "101", "-1", "abc"}},
	{Name: "split-storage-retry-initial-backoff", Allowed: "a duration > 0", Bad: []string{"0", "-1s", "abc"}},
	{Name: "split-storage-retry-max-backoff", Allowed: "a duration >= --split-storage-retry-initial-backoff", Bad: []string{"100ms", "0", "-1s", "abc"}},
	{Name: "split-storage-request-timeout", Allowed: "a duration > 0", Bad: []string{"0", "-1s", "abc", "30"}},
	{Name: "split-storage-lock-for", Allowed: "0 (no lock) or 24h..876000h (a day to 100 years)", Bad: []string{"1h", "-24h", "abc", "900000h"}},
	{Name: "split-storage-lock-mode", Allowed: "governance or compliance", Bad: []string{"", "strict", "GOVERNANCE"}},
	{Name: "split-storage-s3-endpoint", Allowed: "http:// or https:// URL", Bad: []string{"localhost:9000", "ftp://s3.example.com", "http://", "http://[::1"}},
	{Name: "split-storage-s3-region", Allowed: "must be set when --split-storage-backend=s3", Bad: []string{""},
		With: []string{"--split-storage-backend=s3", "--split-storage-s3-bucket=b"}},
	{Name: "split-storage-s3-bucket", Allowed: "must be set when --split-storage-backend=s3", Bad: []string{""}, With: []string{"--split-storage-backend=s3"}},
	{Name: "split-storage-s3-force-path-style", Allowed: "true, false", Bad: []string{"yes", "abc"}},
	{Name: "split-storage-s3-sse", Allowed: "empty, AES256, aws:kms, aws:kms:dsse", Bad: []string{"rot13", "aes256"},
		With: []string{"--split-storage-backend=s3", "--split-storage-s3-bucket=b"}},
	{Name: "split-storage-s3-sse-kms-key-id", Allowed: "empty unless --split-storage-s3-sse is aws:kms or aws:kms:dsse", Bad: []string{"alias/backups"},
		With: []string{"--split-storage-backend=s3", "--split-storage-s3-bucket=b"}},
	{Name: "split-storage-gcs-bucket", Allowed: "must be set when --split-storage-backend=gcs", Bad: []string{""}, With: []string{"--split-storage-backend=gcs"}},
	{Name: "split-storage-s3-prefix", Free: "any key prefix inside the bucket"},
	{Name: "split-storage-gcs-prefix", Free: "any object name prefix inside the bucket"},
	{Name: "split-storage-azure-account", Allowed: "must be set when --split-storage-backend=azure", Bad: []string{""},
		With: []string{"--split-storage-backend=azure", "--split-storage-azure-container=c", "--split-storage-azure-key-file=/k"}},
	{Name: "split-storage-azure-container", Allowed: "must be set when --split-storage-backend=azure", Bad: []string{""},
		With: []string{"--split-storage-backend=azure", "--split-storage-azure-account=a", "--split-storage-azure-key-file=/k"}},
	{Name: "split-storage-azure-key-file", Allowed: "must be set when --split-storage-backend=azure", Bad: []string{""},
		With: []string{"--split-storage-backend=azure", "--split-storage-azure-account=a", "--split-storage-azure-container=c"}},
	{Name: "split-storage-azure-endpoint", Allowed: "http:// or https:// URL", Bad: []string{"localhost:10000", "ftp://blob.example.com", "http://"}},
	{Name: "split-storage-azure-prefix", Free: "any blob name prefix inside the container"},
	{Name: "split-storage-encryption-key-file", Allowed: `empty (no encryption) or a readable file of lines "<id> <base64 of 32 random bytes>"`,
		Bad: []string{"/nonexistent/vtfifo-keys", "/dev/null"}},
	{Name: "split-storage-signing-key-file", Allowed: `empty (no seal) or a readable file of lines "<id> <base64 of 32 random bytes>"`,
		Bad: []string{"/nonexistent/vtfifo-signing-keys", "/dev/null"}},
	{Name: "split-storage-accept-unsealed", Free: "a boolean; it matters only with --split-storage-signing-key-file"},
	{Name: "split-storage-s3-storage-class", Free: "S3-compatible stores define their own classes (Ceph placement targets); the store refuses an unknown one"},
}

// CrossFlag are the rules between flags; Case.Flag is the flag the error names.
var CrossFlag = []Case{
	{Name: "retry-max-backoff<retry-initial-backoff", Flag: "split-storage-retry-max-backoff",
		Allowed: "a duration >= --split-storage-retry-initial-backoff (20s)",
		Args:    []string{"--split-storage-retry-initial-backoff=20s", "--split-storage-retry-max-backoff=10s"}},
	{Name: "retry-initial-backoff-above-default-max", Flag: "split-storage-retry-max-backoff",
		Allowed: "a duration >= --split-storage-retry-initial-backoff (1m0s)",
		Args:    []string{"--split-storage-retry-initial-backoff=1m"}},
	{Name: "s3-sse-kms-key-id-with-AES256", Flag: "split-storage-s3-sse-kms-key-id", Allowed: "empty unless --split-storage-s3-sse is aws:kms or aws:kms:dsse",
		Args: []string{"--split-storage-backend=s3", "--split-storage-s3-bucket=b", "--split-storage-s3-sse=AES256",
			"--split-storage-s3-sse-kms-key-id=alias/backups"}},
	// A bad S3 setting is refused whatever the backend.
	{Name: "s3-sse-with-file-backend", Flag: "split-storage-s3-sse", Allowed: "empty, AES256, aws:kms, aws:kms:dsse",
		Args: []string{"--split-storage-backend=file", "--split-storage-s3-sse=rot13"}},
	{Name: "s3-bucket-with-gcs-bucket-only", Flag: "split-storage-s3-bucket", Allowed: "must be set when --split-storage-backend=s3",
		Args: []string{"--split-storage-backend=s3", "--split-storage-gcs-bucket=b"}},

	// The fifo engine's flags between themselves.
	{Name: "read-buffer-size-with-mariabackup", Flag: "fifo-backup-read-buffer-size", Allowed: "0 with --fifo-backup-tool-flavor=mariabackup",
		Args: []string{"--fifo-backup-tool-flavor=mariabackup", "--fifo-backup-read-buffer-size=8MiB"}},
	{Name: "source-fifo-with-mariabackup", Flag: "fifo-backup-source", Allowed: "auto, stdout with --fifo-backup-tool-flavor=mariabackup",
		Args: []string{"--fifo-backup-tool-flavor=mariabackup", "--fifo-backup-source=fifo"}},

	// Tool flags the engine sets, or whose files a restore cannot use.
	{Name: "tool-flag-compress", Flag: "fifo-backup-backup-flags", Allowed: "is not allowed there", Args: []string{"--fifo-backup-backup-flags=--compress"}},
	{Name: "tool-flag-compress-zstd", Flag: "fifo-backup-backup-flags", Allowed: "is not allowed there",
		Args: []string{"--fifo-backup-backup-flags=--compress=zstd"}},
	{Name: "tool-flag-encrypt", Flag: "fifo-backup-backup-flags", Allowed: "is not allowed there",
		Args: []string{"--fifo-backup-backup-flags=--encrypt=AES256 --encrypt-key-file=/k"}},
	{Name: "tool-flag-read-buffer-size", Flag: "fifo-backup-backup-flags", Allowed: "is not allowed there",
		Args: []string{"--fifo-backup-backup-flags=--read-buffer-size=128MiB"}},
	{Name: "tool-flag-fifo-streams", Flag: "fifo-backup-backup-flags", Allowed: "is not allowed there",
		Args: []string{"--fifo-backup-backup-flags=--fifo-streams=4"}},
	{Name: "tool-flag-parallel", Flag: "fifo-backup-backup-flags", Allowed: "is not allowed there", Args: []string{"--fifo-backup-backup-flags=--parallel=8"}},
	{Name: "tool-flag-stream", Flag: "fifo-backup-backup-flags", Allowed: "is not allowed there", Args: []string{"--fifo-backup-backup-flags=--stream=tar"}},
	{Name: "tool-flag-target_dir", Flag: "fifo-backup-backup-flags", Allowed: "is not allowed there",
		Args: []string{"--fifo-backup-backup-flags=--target_dir=/tmp"}},
	// Engine fifo with storage split: every lane fills a part in the spool. 64 lanes and 256
	// uploads of 5 GiB parts (1.6 TB) exceed any test machine's spool file system.
	{Name: "lanes>spool-file-system", Flag: "fifo-backup-lanes",
		Allowed: "cannot hold a part of --split-storage-part-size=5GiB for each beside --split-storage-upload-concurrency=256 uploads: allowed values are",
		Args: []string{"--backup-engine-implementation=fifo", "--fifo-backup-lanes=64", "--split-storage-part-size=5GiB",
			"--split-storage-upload-concurrency=256"}},

	// The test restore stores its record beside the backup: the split storage only.
	{Name: "test-restore-with-file-storage", Flag: "backup-storage-implementation", Allowed: "allowed values are split",
		Args: []string{"--fifo-backup-test-restore", "--backup-storage-implementation=file"}},

	// Vitess's compression flags, which the fifo engine validates at startup where it is the default engine.
	{Name: "compression-engine-name=brotli", Flag: "compression-engine-name", Allowed: "pgzip, pargzip, zstd, lz4, external",
		Args: []string{"--backup-engine-implementation=fifo", "--compression-engine-name=brotli"}},
	{Name: "compression-engine-name=external-without-command", Flag: "compression-engine-name", Allowed: "external with --external-compressor set",
		Args: []string{"--backup-engine-implementation=fifo", "--compression-engine-name=external"}},
	{Name: "external-compressor-unbalanced-quote", Flag: "external-compressor", Allowed: "a command split like a shell would",
		Args: []string{"--backup-engine-implementation=fifo", "--external-compressor=zstd -c '", "--external-compressor-extension=.zst"}},
	{Name: "external-compressor-without-extension", Flag: "external-compressor-extension", Allowed: "a file extension such as .zst",
		Args: []string{"--backup-engine-implementation=fifo", "--external-compressor=zstd -c"}},
}

// requiredWhen is how a backend documents a flag it needs when it is the
// one selected (backend.Selected, flagvalue.Document).
const requiredWhen = "must be set when --split-storage-backend="

// All is Flags and, for each flag a backend of the split storage requires
// when selected that Flags does not list, its case: empty under that
// backend, the kind's other required flags set. A new backend's required
// flags are covered with no edit here; its other constrained flags need
// their entry in Flags.
func All() []Flag {
	fs := pflag.NewFlagSet("plugintest", pflag.ContinueOnError)
	splitstorage.RegisterFlags(fs)    // documents every backend's flags (flagvalue.Document)
	required := map[string][]string{} // kind -> its required flags
	for name, allowed := range flagvalue.Documented() {
		if kind, ok := strings.CutPrefix(allowed, requiredWhen); ok && fs.Lookup(name) != nil {
			required[kind] = append(required[kind], name)
		}
	}
	all := slices.Clone(Flags)
	for _, kind := range slices.Sorted(maps.Keys(required)) {
		names := required[kind]
		slices.Sort(names)
		for _, name := range names {
			if _, listed := lookup(Flags, name); listed {
				continue
			}
			with := []string{"--split-storage-backend=" + kind}
			for _, other := range names {
				if other != name {
					with = append(with, "--"+other+"=x")
				}
			}
			all = append(all, Flag{Name: name, Allowed: requiredWhen + kind, Bad: []string{""}, With: with})
		}
	}
	return all
}

// Cases is every refused startup: each bad value of All, then CrossFlag.
func Cases() []Case {
	var cases []Case
	for _, f := range All() {
		for _, v := range f.Bad {
			cases = append(cases, Case{
				Name:    fmt.Sprintf("%s=%q", f.Name, v),
				Flag:    f.Name,
				Allowed: f.Allowed,
				Args:    append(slices.Clone(f.With), "--"+f.Name+"="+v),
			})
		}
	}
	return append(cases, CrossFlag...)
}

// Lookup returns the table's entry for a flag (All's).
func Lookup(name string) (Flag, bool) { return lookup(All(), name) }

func lookup(flags []Flag, name string) (Flag, bool) {
	for _, f := range flags {
		if f.Name == name {
			return f, true
		}
	}
	return Flag{}, false
}

// EngineFlag reports whether a flag exists only in the binaries that run backups (vttablet,
// vtbackup): the engine's flags and the Vitess flags it reads. The storage's flags are in
// vtctld too.
func EngineFlag(arg string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	return !strings.HasPrefix(name, "split-storage-") && name != "backup-storage-implementation"
}

// Binaries are the binaries that take every flag of c.
func (c Case) Binaries() []string {
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--fifo-backup-test-restore") {
			return []string{"vtbackup"}
		}
	}
	for _, a := range c.Args {
		if EngineFlag(a) {
			return []string{"vttablet", "vtbackup"}
		}
	}
	return []string{"vttablet", "vtbackup", "vtctld"}
}

// Check checks a startup error (or the binary's output) for c: it must name --Flag and
// Allowed. It returns what is missing, or "".
func (c Case) Check(msg string) string {
	var missing []string
	if !strings.Contains(msg, "--"+c.Flag) {
		missing = append(missing, "the flag --"+c.Flag)
	}
	if !strings.Contains(msg, c.Allowed) {
		missing = append(missing, fmt.Sprintf("the allowed values %q", c.Allowed))
	}
	return strings.Join(missing, " and ")
}

// Uncovered returns the registered flags (without dashes) that are not in All, and the
// entries of All that are not registered.
func Uncovered(registered []string) (missing, stale []string) {
	all := All()
	for _, name := range registered {
		if _, ok := lookup(all, name); !ok {
			missing = append(missing, name)
		}
	}
	for _, f := range all {
		if !slices.Contains(registered, f.Name) {
			stale = append(stale, f.Name)
		}
	}
	return missing, stale
}
