package fifobackupengine

import (
	"context"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/google/shlex"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// keyringConfigName is a keyring component configuration a Percona
// XtraBackup backup carries for its prepare (xtrabackup.cc,
// keyring_init_offline: component_keyring_file.cnf, _kmip, _kms; older 8.0
// builds wrote xtrabackup_component_keyring_*.cnf).
var keyringConfigName = regexp.MustCompile(`^(xtrabackup_)?component_keyring_[a-z]+\.cnf$`)

// checkKeyring refuses a Percona XtraBackup backup of a server with
// encrypted InnoDB tablespaces when nothing would give its prepare the
// keyring: neither a keyring component configuration in the stream nor a
// keyring option in --fifo-backup-prepare-flags (--keyring-file-data with the
// 8.0 plugin, --component-keyring-config, --transition-key). Such a backup
// would be listed and fail at every restore.
func checkKeyring(ctx context.Context, query queryRows, files streamFiles, prepareFlags string) error {
	rows, err := query(ctx, "SELECT NAME FROM information_schema.INNODB_TABLESPACES WHERE ENCRYPTION = 'Y'")
	if err != nil {
		return errtext.Wrap(err, "cannot list the server's encrypted tablespaces")
	}
	if len(rows) == 0 {
		return nil
	}
	for f := range files {
		if keyringConfigName.MatchString(path.Base(f)) {
			return nil
		}
	}
	if prepareFlagsNameKeyring(prepareFlags) {
		return nil
	}
	names := make([]string, 0, 5)
	for _, r := range rows[:min(len(rows), 5)] {
		names = append(names, r[0])
	}
	return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION,
		"the server has %d encrypted tablespaces (%s) and nothing would give the restore's prepare the keyring: the stream holds no "+
			"component_keyring_*.cnf and --fifo-backup-prepare-flags names none (--component-keyring-config, --keyring-file-data, --transition-key); the "+
			"backup is refused, since every restore of it would fail",
		len(rows), strings.Join(names, ", "))
}

// keyringOptions are the tool's options that give a prepare its keyring.
var keyringOptions = []string{"--keyring-file-data", "--component-keyring-config", "--component-keyring-file-config", "--transition-key"}

// prepareFlagsNameKeyring reports whether the operator's prepare flags give
// the tool a keyring.
func prepareFlagsNameKeyring(prepareFlags string) bool {
	flags := strings.ToLower(strings.ReplaceAll(prepareFlags, "_", "-"))
	for _, opt := range keyringOptions {
		if strings.Contains(flags, opt) {
			return true
		}
	}
	return false
}

// KeyringPrepareFlags splits prepareFlags into the options that give the
// tool its keys (keyOptionFamilies), each with its value, and the others: a prepare of an
// encrypted backup needs the first whatever else the operator gave (a test
// restore run again without the operator's flags keeps them). Each is as
// shlex.Split reads it back, "" where there are none.
func KeyringPrepareFlags(prepareFlags string) (keyring, others string) {
	args, err := shlex.Split(prepareFlags)
	if err != nil {
		return "", prepareFlags // refused at startup (Config.Validate)
	}
	var kept, rest []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.ToLower(strings.ReplaceAll(args[i], "_", "-")), "=")
		if !givesKeys(name) {
			rest = append(rest, shellQuoted(args[i]))
			continue
		}
		kept = append(kept, shellQuoted(args[i]))
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			kept = append(kept, shellQuoted(args[i]))
		}
	}
	return strings.Join(kept, " "), strings.Join(rest, " ")
}

// keyOptionFamilies are the tool's options, each with its family (name-...),
// that give a prepare its keys: Percona's keyring (keyringOptions; a
// keyring plugin loaded early), MariaDB's key management plugins and where
// they load from.
var keyOptionFamilies = append(slices.Clone(keyringOptions), "--keyring", "--early-plugin-load", "--plugin-load", "--plugin-dir",
	"--file-key-management", "--hashicorp-key-management", "--aws-key-management")

func givesKeys(name string) bool {
	for _, f := range keyOptionFamilies {
		if name == f || strings.HasPrefix(name, f+"-") {
			return true
		}
	}
	return false
}

// shellQuoted is arg as shlex.Split reads it back whole.
func shellQuoted(arg string) string {
	if arg != "" && strings.Trim(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}
