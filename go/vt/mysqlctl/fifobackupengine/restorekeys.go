package fifobackupengine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/vterrors"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// ErrKeysUnavailable marks a restore refused because the restoring host
// cannot give its prepare the keys a backup needs (the key file missing,
// unreadable, without a key id, or with another key under one): a setting
// of this host, not damage to the backup. A test restore records no verdict
// for it, the CLI exits 3.
var ErrKeysUnavailable = errors.New("the restoring host cannot give the prepare the backup's encryption keys")

// keysError is a refusal for want of keys: FAILED_PRECONDITION to Vitess,
// ErrKeysUnavailable to errors.Is.
type keysError struct{ msg string }

func (e *keysError) Error() string           { return e.msg }
func (e *keysError) ErrorCode() vtrpcpb.Code { return vtrpcpb.Code_FAILED_PRECONDITION }
func (e *keysError) Is(target error) bool    { return target == ErrKeysUnavailable }

// Unreadable: this host's keys, not the backup, are what is missing.
func (e *keysError) Unreadable() bool { return true }

var (
	_ vterrors.ErrorWithCode = (*keysError)(nil)
	_ unreadable.Marker      = (*keysError)(nil)
)

// keyNeed is what a chain's backups need of the server's encryption.
type keyNeed struct {
	plugin  string
	keyFile string            // the newest backup's file_key_management_filename
	checks  map[uint32]string // key id -> check value ("" unknown)
	backups map[uint32]string // key id -> a backup that needs it
}

// chainKeyNeed gathers the keys every backup of a chain needs; nil when none
// was taken of a server that encrypts.
func chainKeyNeed(chain []member) (*keyNeed, error) {
	var need *keyNeed
	for _, c := range chain {
		enc := c.m.ServerEncryption
		if enc == nil {
			continue
		}
		if need == nil {
			need = &keyNeed{plugin: enc.Plugin, checks: map[uint32]string{}, backups: map[uint32]string{}}
		}
		if enc.Plugin != need.plugin {
			return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s was taken with the encryption plugin %s, its chain's full backup with %s: "+
				"no one server configuration prepares both", c.m.BackupName, enc.Plugin, need.plugin)
		}
		need.keyFile = enc.KeyFile
		for _, id := range enc.KeyIDs {
			check := enc.KeyChecks[strconv.FormatUint(uint64(id), 10)]
			if old, seen := need.checks[id]; seen && old != "" && check != "" && old != check {
				return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backups %s and %s of one chain were taken with different keys under key id %d: "+
					"no one key file prepares both", need.backups[id], c.m.BackupName, id)
			}
			if need.checks[id] == "" {
				need.checks[id], need.backups[id] = check, c.m.BackupName
			}
		}
	}
	return need, nil
}

// checkRestoreKeys fails a restore, before anything is downloaded or
// deleted, when the prepare could not have the keys its backups need: the
// key file the restoring host's option file names (hostCnf; else the
// source's, as the prepare would read it from backup-my.cnf) missing,
// unreadable, without one of the key ids, or with another key under one.
// Plugins other than file_key_management (KMS) are checked by the prepare
// itself.
func checkRestoreKeys(chain []member, hostCnf string, logger logutil.Logger) error {
	need, err := chainKeyNeed(chain)
	if err != nil || need == nil {
		return err
	}
	ids := make([]uint32, 0, len(need.checks))
	for id := range need.checks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	newest := chain[len(chain)-1].m.BackupName
	if need.plugin != fileKeyManagement {
		logger.Infof("fifo restore: %s needs key ids %s from the encryption plugin %s, which only its prepare can check", newest, idList(ids), need.plugin)
		return nil
	}
	keyFile, from := need.keyFile, "the source server's file_key_management_filename, which the backup records"
	if hostCnf != "" {
		opts, err := ServerOptions(hostCnf, "file_key_management_filename", "file_key_management_filekey")
		if err != nil {
			return errtext.Wrap(err, "cannot read the restoring host's option file")
		}
		if opts["file_key_management_filekey"] != "" {
			logger.Infof("fifo restore: %s encrypts its key file with a file key: the keys %s are checked by the prepare", hostCnf, idList(ids))
			return nil
		}
		if v := opts["file_key_management_filename"]; v != "" {
			keyFile, from = v, "file_key_management_filename in "+hostCnf
		}
	}
	fix := "set file_key_management_filename in the [mysqld] group of " + hostCnf + " to a key file that holds key ids " + idList(ids) + " of the source server"
	if hostCnf == "" {
		fix = "give an option file whose [mysqld] group sets file_key_management_filename to a key file that holds key ids " + idList(ids) +
			" of the source server (vtfifo: --defaults-file)"
	}
	fail := func(format string, args ...any) error {
		return &keysError{fmt.Sprintf("backup %s is encrypted by %s with key ids %s: %s; nothing was downloaded: %s",
			newest, need.plugin, idList(ids), fmt.Sprintf(format, args...), fix)}
	}
	if keyFile == "" {
		return fail("no key file is named (the backup records none)")
	}
	keys, err := readKeyFile(keyFile)
	switch {
	case errors.Is(err, errKeyFileEncrypted):
		logger.Infof("fifo restore: %v: the keys %s are checked by the prepare", err, idList(ids))
		return nil
	case err != nil:
		return fail("the key file (%s) cannot be used: %v", from, err)
	}
	for _, id := range ids {
		key, ok := keys[id]
		switch {
		case !ok:
			return fail("key id %d is not in the key file %s (%s)", id, keyFile, from)
		case need.checks[id] != "" && keyCheck(key) != need.checks[id]:
			return fail("key id %d in the key file %s (%s) is not the key backup %s was taken with", id, keyFile, from, need.backups[id])
		}
	}
	logger.Infof("fifo restore: the key file %s (%s) holds key ids %s of %s", keyFile, from, idList(ids), newest)
	return nil
}

func idList(ids []uint32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, ",")
}
