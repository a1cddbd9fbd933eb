package selftest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// keyring is the scratch server's own keyring, of the kind the host's
// server loads, so an encrypted table takes the host's code path. The
// host's keys are never used: a second server writing to a live keyring
// file can lose the live server's keys.
type keyring struct {
	// mysqldLines load it into the scratch server's [mysqld].
	mysqldLines string
	// prepareFlags give it to the tool's prepare (Percona XtraBackup's
	// keyring_file plugin; mariabackup writes its plugin's options into
	// backup-my.cnf).
	prepareFlags string
	// testServerFlags give it to the server a test restore starts
	// (mariabackup's backup-my.cnf names its plugin, which test-restore
	// reads).
	testServerFlags []string
	// tableOption makes a table encrypted.
	tableOption string
	kind        string
}

// planKeyring reads the host's option file (hostCnf) and returns the
// scratch keyring made in dir, or why an encrypted table is not tried.
func planKeyring(hostCnf, mysqld, dir string, mariadb bool) (*keyring, string, error) {
	if hostCnf == "" {
		return nil, "no host option file given (--host-cnf), so no keyring is known", nil
	}
	if mariadb {
		return planMariaDBKeyring(hostCnf, dir)
	}
	return planMySQLKeyring(hostCnf, mysqld, dir)
}

func planMariaDBKeyring(hostCnf, dir string) (*keyring, string, error) {
	var plugins []string
	for _, name := range []string{"plugin_load_add", "plugin_load"} {
		v, err := fifobackupengine.ServerOptionValues(hostCnf, name)
		if err != nil {
			return nil, "", err
		}
		plugins = append(plugins, v...)
	}
	all := strings.Join(plugins, ";")
	switch {
	case strings.Contains(all, "file_key_management"):
	case strings.Contains(all, "key_management"):
		return nil, fmt.Sprintf("the host loads a key management plugin (%s) that the self-test does not copy into a scratch server; only "+
			"file_key_management is", all), nil
	default:
		return nil, "the host's option file " + hostCnf + " loads no key management plugin", nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, "", err
	}
	keys := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(keys, []byte("1;"+hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, "", err
	}
	return &keyring{
		mysqldLines: "plugin_load_add=file_key_management\nfile_key_management_filename=" + keys + "\n",
		tableOption: "ENCRYPTED=YES", kind: "file_key_management with a scratch key file",
	}, "", nil
}

func planMySQLKeyring(hostCnf, mysqld, dir string) (*keyring, string, error) {
	if manifest := filepath.Join(filepath.Dir(mysqld), "mysqld.my"); fileExists(manifest) {
		return nil, fmt.Sprintf("a keyring component is loaded through %s, which a scratch server would share with the host's server: an encrypted table "+
			"would write a key into the host's keyring, so none is made", manifest), nil
	}
	v, err := fifobackupengine.ServerOptions(hostCnf, "early_plugin_load")
	if err != nil {
		return nil, "", err
	}
	switch plugins := v["early_plugin_load"]; {
	case strings.Contains(plugins, "keyring_file"):
	case plugins != "":
		return nil, fmt.Sprintf("the host loads a keyring plugin (%s) that the self-test does not copy into a scratch server; only keyring_file is", plugins), nil
	default:
		return nil, "the host's option file " + hostCnf + " loads no keyring (early-plugin-load) and " + filepath.Dir(mysqld) + " holds no mysqld.my manifest", nil
	}
	data := filepath.Join(dir, "keyring")
	return &keyring{
		mysqldLines:     "early-plugin-load=keyring_file.so\nkeyring_file_data=" + data + "\n",
		prepareFlags:    "--keyring-file-data=" + data,
		testServerFlags: []string{"--early-plugin-load=keyring_file.so", "--keyring-file-data=" + data},
		tableOption:     "ENCRYPTION='Y'", kind: "keyring_file with a scratch keyring",
	}, "", nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
