package fifobackupengine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"vitess.io/vitess/go/vt/logutil"
)

// What a prepare of a MariaDB backup, or a server started on its files,
// reads to decrypt it is decided here, once, from how the tools read option
// files (mysys): a --defaults-file is the only file read (a
// --defaults-extra-file beside it is ignored), !include inside it is
// followed, and the last value of an option wins.
//
//   - The backup's own settings come from its backup-my.cnf: mariabackup
//     wrote there the source server's page size, undo and checksum settings,
//     and its encryption plugin (plugin_load, plugin_dir, the plugin's
//     variables: encryption_plugin.cc, encryption_plugin_backup_init).
//   - The restoring host's own settings come from its option file (the
//     tablet's my.cnf, vtfifo's --defaults-file): where its plugin library is
//     (plugin_dir) and where its keys are (the plugin's variables, such as
//     file_key_management_filename): on another host the key file may be
//     elsewhere than on the source.
//
// The host's key settings win over the backup's; the backup's server
// settings win over the host's.

// KeySettings returns the [mysqld] option lines (name=value) that load the
// encryption plugin a MariaDB backup was taken with, from its backup-my.cnf
// (backupCnf), with the restoring host's own plugin_dir and plugin variables
// from hostCnf (may be empty) over the backup's; none when the backup names
// no encryption plugin.
func KeySettings(backupCnf, hostCnf string) ([]string, error) {
	backup, err := readOptionFile(backupCnf)
	if err != nil {
		return nil, err
	}
	keys, err := keySettings(backup, hostCnf)
	return formatOptions(keys), err
}

// keySettings is KeySettings on the backup's option lines.
func keySettings(backup []optionLine, hostCnf string) ([]optionLine, error) {
	backup = inGroups(backup, serverOptionGroups)
	load := lastValues(backup, "plugin_load")["plugin_load"]
	if load == "" {
		return nil, nil
	}
	plugin, _, _ := strings.Cut(load, "=")
	ours := func(name string) bool {
		return strings.HasPrefix(name, strings.ReplaceAll(plugin, "_", "-")+"-") || name == "plugin-dir"
	}
	out := []optionLine{{Name: "plugin-load-add", Value: load}}
	at := map[string]int{"plugin-load-add": 0}
	set := func(lines []optionLine, keep func(string) bool) {
		for _, l := range lines {
			if l.Off || !keep(l.Name) {
				continue
			}
			if i, seen := at[l.Name]; seen {
				out[i].Value = l.Value
				continue
			}
			at[l.Name] = len(out)
			out = append(out, optionLine{Name: l.Name, Value: l.Value})
		}
	}
	set(backup, func(name string) bool { return ours(name) || name == "innodb-encrypt-log" })
	if hostCnf != "" {
		host, err := readOptionFile(hostCnf)
		if err != nil {
			return nil, err
		}
		set(inGroups(host, serverOptionGroups), ours)
	}
	return out, nil
}

// formatOptions writes option lines back as "name=value".
func formatOptions(lines []optionLine) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Name+"="+quoteOptionValue(l.Value))
	}
	return out
}

// quoteOptionValue writes a value back as mysys reads it.
func quoteOptionValue(v string) string {
	if v == "" || !strings.ContainsAny(v, " \t#;'\"") {
		return v
	}
	return `"` + v + `"`
}

// secretValues are the values of the options that are secrets
// (isSecretFlag): the tool echoes its plugin's parameters into its output
// ("Encryption plugin parameter : '--file_key_management_filekey=...'").
func secretValues(lines ...[]optionLine) []string {
	var out []string
	for _, ls := range lines {
		for _, l := range ls {
			if isSecretFlag("--"+l.Name) && len(l.Value) >= minSecretLen {
				out = append(out, l.Value)
			}
		}
	}
	return out
}

// prepareOptionFilePrefix names the work directory of the option file a
// mariabackup --prepare reads, beside its target directory (never in it:
// the target's files move into the data directory). A work directory
// (newWorkDir): owned by this process, so that the next prepare removes one
// a killed run left, with the key settings in it.
const prepareOptionFilePrefix = ".vtfifo-prepare-"

// writePrepareOptionFile writes the one option file a mariabackup --prepare
// of target reads (see KeySettings): the backup's backup-my.cnf, the host's
// key settings over it. Nothing else of the host's file: --export starts a
// server on the target that reads the same file, and would take the host's
// user= (a root-run restore then writes as another user), data directory
// and the rest. It returns the file, the secrets the tool may echo, and a
// function that removes the file and its directory.
func writePrepareOptionFile(hostCnf, target string, logger logutil.Logger) (path string, secrets []string, remove func(), err error) {
	backupCnf := filepath.Join(target, "backup-my.cnf")
	backup, err := os.ReadFile(backupCnf)
	if err != nil {
		return "", nil, nil, fmt.Errorf("the backup has no readable backup-my.cnf: %w", err)
	}
	lines, err := readOptionFile(backupCnf)
	if err != nil {
		return "", nil, nil, err
	}
	keys, err := keySettings(lines, hostCnf)
	if err != nil {
		return "", nil, nil, err
	}
	secrets = secretValues(lines, keys)
	var b strings.Builder
	fmt.Fprintf(&b, "# vtfifo: the options of one prepare of %s: the backup's own settings (backup-my.cnf), the\n", target)
	b.WriteString("# restoring host's encryption key settings over them.\n")
	b.Write(backup)
	if len(keys) > 0 {
		b.WriteString("\n[mysqld]\n" + strings.Join(formatOptions(keys), "\n") + "\n")
	}
	dir, release, err := newWorkDir(filepath.Dir(filepath.Clean(target)), prepareOptionFilePrefix, logger)
	if err != nil {
		return "", nil, nil, fmt.Errorf("cannot write the prepare's option file: %w", err)
	}
	path = filepath.Join(dir, "prepare.cnf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		release()
		return "", nil, nil, fmt.Errorf("cannot write the prepare's option file: %w", err)
	}
	return path, secrets, release, nil
}
