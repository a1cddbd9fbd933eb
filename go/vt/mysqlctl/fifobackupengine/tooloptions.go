package fifobackupengine

import (
	"strings"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// toolOptionRule is a tool option an operator may not set, and why. name
// also covers its family (name-...: compress-threads under compress).
type toolOptionRule struct {
	name, why string
	// commandLineOnly: the engine's command line always overrides it, so an
	// option file may carry it (an operator's own [xtrabackup] target-dir).
	commandLineOnly bool
}

const (
	whyEngineSets  = "the engine sets it"
	whyIncremental = "the engine takes incremental backups by its own policy (--fifo-backup-full-interval) and records their base"
	whyPartial     = "it makes the tool copy only some databases or tables, and the backup would be listed as a full one; a table restore reads some " +
		"tables of a full backup (vtfifo restore-table)"
	whyToolCompress = "it makes the tool write .zst/.lz4/.qp files that the restore never decompresses; the lanes are compressed by Vitess's " +
		"--compression-engine-name"
	whyToolEncrypt = "it makes the tool write .xbcrypt files that the restore never decrypts; the split storage encrypts (--split-storage-encryption-key-file)"
)

// backupOptionRules are refused on the tool's --backup command line
// (--fifo-backup-backup-flags) and, unless commandLineOnly, in the option
// groups the tool reads (toolOptionGroups).
var backupOptionRules = []toolOptionRule{
	{name: "compress", why: whyToolCompress},
	{name: "encrypt", why: whyToolEncrypt},
	{name: "databases", why: whyPartial},
	{name: "tables", why: whyPartial},
	{name: "rsync", why: "the engine streams xbstream, which --rsync does not work with"},
	{name: "no-lock", why: "the engine passes --slave-info, which Percona XtraBackup refuses with --no-lock (xtrabackup.cc, xb_init), and without the " +
		"lock the non-InnoDB tables and the binlog position are not consistent with the data"},
	{name: "incremental", why: whyIncremental},
	{name: "backup-incremental-base", why: whyIncremental},
	{name: "page-tracking", why: whyIncremental},
	{name: "fifo-streams", why: "use --fifo-backup-fifo-streams"},
	{name: "fifo-dir", why: "use --fifo-backup-fifo-dir"},
	{name: "fifo-timeout", why: "use --fifo-backup-fifo-timeout"},
	{name: "decompress", why: "it is a --prepare-side option", commandLineOnly: true},
	{name: "decrypt", why: "it is a --prepare-side option", commandLineOnly: true},
	{name: "read-buffer-size", why: "use --fifo-backup-read-buffer-size, which is checked against the largest chunk a restore takes", commandLineOnly: true},
	{name: "parallel", why: "use --fifo-backup-parallel", commandLineOnly: true},
	{name: "stream", why: "the engine streams xbstream", commandLineOnly: true},
	{name: "target-dir", why: whyEngineSets, commandLineOnly: true},
	{name: "extra-lsndir", why: whyEngineSets, commandLineOnly: true},
}

// prepareOptionRules are refused in --fifo-backup-prepare-flags: the engine
// names them by the tool's version (Percona XtraBackup 8.4.0-8 and 9.7.2-2
// renamed them, and an old and a new name together are an error).
var prepareOptionRules = []toolOptionRule{
	{name: "apply-log-only", why: whyEngineSets + " for every prepare of a chain but the last (as --apply-redo-only from 8.4.0-8)"},
	{name: "apply-redo-only", why: whyEngineSets + " for every prepare of a chain but the last"},
	{name: "incremental-dir", why: whyEngineSets + " to apply each delta of a chain (as --prepare-incremental-from-dir from 8.4.0-8)"},
	{name: "prepare-incremental-from-dir", why: whyEngineSets + " to apply each delta of a chain"},
	{name: "target-dir", why: whyEngineSets},
	{name: "export", why: "the engine sets it where a table restore needs it"},
}

// ruleFor returns the rule that refuses option name (dashes for
// underscores, no leading dashes), or nil.
func ruleFor(name string, rules []toolOptionRule) *toolOptionRule {
	for i, r := range rules {
		if name == r.name || strings.HasPrefix(name, r.name+"-") {
			return &rules[i]
		}
	}
	return nil
}

// checkToolFlags refuses, naming the flag, a tool option in an operator's
// extra flags that rules refuse.
func checkToolFlags(flag string, args []string, rules []toolOptionRule) error {
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		name = strings.ReplaceAll(strings.ToLower(name), "_", "-")
		name = strings.TrimPrefix(name, "loose-")
		if r := ruleFor(name, rules); r != nil {
			return errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT,
				"invalid value for --%s: it carries --%s, which is not allowed there: %s", flag, name, r.why)
		}
	}
	return nil
}

// checkToolOptionFile reads the option file the tool is given
// (--defaults-file: the tablet's my.cnf, includes resolved) as the tool
// does, and refuses an option that would change what the tool copies or how
// it writes the files, naming the file and line. It returns the tool's own
// options found, for the log.
func checkToolOptionFile(path, flavor string) ([]optionLine, error) {
	lines, err := readOptionFile(path)
	if err != nil {
		return nil, errtext.Wrapf(err, "cannot read the option file the backup tool is given")
	}
	own := inGroups(lines, toolOptionGroups(flavor))
	for _, l := range own {
		if l.Off {
			continue
		}
		if r := ruleFor(l.Name, backupOptionRules); r != nil && !r.commandLineOnly {
			return own, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION,
				"%s line %d sets [%s] %s, which %s reads as its own --%s: %s; remove the line (a [client] option meant for the mysql client belongs in [mysql])",
				l.File, l.Line, l.Group, l.Name, flavor, l.Name, r.why)
		}
	}
	return own, nil
}
