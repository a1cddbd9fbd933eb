package unreadable

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/vterrors"
)

// TestHostFault: this host failing at its part, however wrapped, is no
// proof about the backup (Is) and says which (HostFault); what the backup's
// bytes say is neither.
func TestHostFault(t *testing.T) {
	_, notFound := exec.LookPath("/nonexistent/xtrabackup")
	host := map[string]struct {
		err error
		why string
	}{
		"a full disk": {fmt.Errorf("write: %w", &fs.PathError{Op: "write", Path: "/d/x", Err: syscall.ENOSPC}), "its disk is full"},
		"wrapped by Vitess": {vterrors.Wrapf(fmt.Errorf("extract: %w", &fs.PathError{Op: "write", Path: "/d/x", Err: syscall.EMFILE}), "restore"),
			"the process has too many open files"},
		"a program not there": {fmt.Errorf("prepare: %w", notFound), "a program it needs cannot be started here"},
		"marked":              {vterrors.Wrap(Host(errors.New("mariabackup --prepare failed"), "it is out of memory"), "restore"), "it is out of memory"},
	}
	for name, c := range host {
		assert.True(t, Is(c.err), name)
		assert.Equal(t, c.why, HostFault(c.err), name)
	}
	for name, err := range map[string]error{
		"nil":           nil,
		"a checksum":    errors.New("checksum mismatch"),
		"access":        &fs.PathError{Op: "open", Path: "/r/x", Err: syscall.EACCES},
		"a text quoted": errors.New("No space left on device"), // only a message: InOutput is for a program's output
	} {
		assert.Equal(t, "", HostFault(err), name)
	}
	assert.Nil(t, Host(nil, "x"))
}

// TestInOutput: the OS's own words in a program's output, as InnoDB and
// the tools print them, and nothing else.
func TestInOutput(t *testing.T) {
	for out, why := range map[string]string{
		"[ERROR] InnoDB: Error number 28 means 'No space left on device'":                     "its disk is full",
		"2026-11-29 [ERROR] [MY-012596] [InnoDB] Error number 24 means 'Too many open files'": "too many open files",
		"xtrabackup: Error writing file 'ib_logfile0' (OS errno 122 - Disk quota exceeded)":   "a disk quota is reached",
		"InnoDB: Cannot allocate memory for the buffer pool":                                  "it is out of memory",
		"[ERROR] InnoDB: Error number 5 means 'Input/output error'":                           "a disk or file system here failed (an input/output error)",
		"[ERROR] [MY-012595] [InnoDB] The error means mysqld does not have the access rights to the directory.": "a file or directory is not " +
			"accessible to it here (its modes, AppArmor or SELinux)",
		"[ERROR] InnoDB: The error means mariadbd does not have the access rights to the directory.": "a file or directory is not accessible " +
			"to it here (its modes, AppArmor or SELinux)",
		"[ERROR] InnoDB: The data file './ibdata1' must be writable": "a file or directory is not accessible to it here (its modes, AppArmor or " +
			"SELinux)",
		"[ERROR] [MY-012584] [InnoDB] io_setup() failed with EAGAIN after 5 attempts.": "the kernel's asynchronous I/O contexts are used up " +
			"(fs.aio-max-nr: too many servers or tools at once)",
		"[Warning] [MY-012582] [InnoDB] io_setup() failed with EAGAIN. Will make 5 attempts before giving up.": "", // it may yet succeed
		"[ERROR] [MY-010187] [Server] Could not open file '/scratch/mysqld.err' for error logging: Permission denied": "a file or directory is not " +
			"accessible to it here (its modes, AppArmor or SELinux)",
		"[ERROR] The socket file path is too long (> 107): /tmp/vtfifo-scratch-992373638/vtfifo-test-restore-3368-608924-" +
			"2b64fe3a5b44c61444c39745ef62587b/mysqld.sock.real": "a socket's path is longer than the 107 bytes a Unix socket takes (a shorter " +
			"directory)",
		"[ERROR] Can't start server: Bind on unix socket: Address already in use":                     "a socket or port it needs is taken by another process",
		"[ERROR] InnoDB: Page [page id: space=5, page number=3] log sequence number is in the future": "",
		"": "",
	} {
		assert.Equal(t, why, InOutput(out), out)
	}
}

// TestKilled: a program killed from outside (SIGKILL, SIGTERM) is the
// host; one that crashed (SIGABRT: an assertion on what it read) or
// exited with a status is not.
func TestKilled(t *testing.T) {
	run := func(script string) string {
		cmd := exec.Command("/bin/sh", "-c", script)
		require.Error(t, cmd.Run())
		return Killed(cmd.ProcessState)
	}
	assert.Contains(t, run("kill -KILL $$"), "SIGKILL")
	assert.Contains(t, run("kill -TERM $$"), "terminated")
	assert.Equal(t, "", run("kill -ABRT $$"))
	assert.Equal(t, "", run("exit 1"))
	assert.Equal(t, "", Killed(nil))
}

// TestInText: a server's error whose words name this host running out of
// something (as MariaDB and MySQL word them) is this host's; a server's
// error about the data is not; an error already marked keeps its mark.
func TestInText(t *testing.T) {
	for text, why := range map[string]string{
		`Error 23 (HY000): Out of resources when opening file './d/#sql-temptable-1.MAI' (Errcode: 24 "Too many open files")`: "too many open files",
		`Error 1030 (HY000): Got error 28 "No space left on device" from storage engine InnoDB`:                               "its disk is full",
		`Error 1041 (HY000): Out of memory; check if mysqld or some other process uses all available memory`:                  "it is out of memory",
		`Error 1135 (HY000): Can't create a new thread (errno 11 "Resource temporarily unavailable")`:                         "it cannot start more threads",
	} {
		err := InText(fmt.Errorf("CHECK TABLE `d`.`t`: %w", errors.New(text)))
		assert.True(t, Is(err), text)
		assert.Equal(t, why, HostFault(err), text)
	}
	for _, text := range []string{
		"Error 1712 (HY000): Index PRIMARY is corrupted",
		"Error 1808 (HY000): Schema mismatch (Table flags don't match)",
		"Error 1146 (42S02): Table 'd.t' doesn't exist",
	} {
		err := InText(errors.New(text))
		assert.False(t, Is(err), text)
		assert.Empty(t, HostFault(err), text)
	}
	assert.NoError(t, InText(nil))
	marked := Host(errors.New("Too many open files"), "its own reason")
	assert.Equal(t, "its own reason", HostFault(InText(marked)))
}

// TestAServersStateIsNoProof: a MySQL server's error naming its state or
// another session's (a lock wait, read-only, a statement killed) is this
// host's failure, one refusing the user a privilege is access; what the
// server says of the data it was given (a schema mismatch, a corrupted
// tablespace) and a lost connection (a server that crashed on what it
// read loses it too) are neither.
func TestAServersStateIsNoProof(t *testing.T) {
	wrap := func(n uint16, msg string) error {
		return fmt.Errorf("CREATE TABLE d._vtfifo_work_x: %w", &mysql.MySQLError{Number: n, Message: msg})
	}
	lock := wrap(1205, "Lock wait timeout exceeded; try restarting transaction")
	assert.True(t, Is(lock))
	assert.Equal(t, "another session held a lock past the server's lock_wait_timeout", HostFault(lock))
	readOnly := wrap(1290, "The MariaDB server is running with the --read-only option so it cannot execute this statement")
	assert.Equal(t, "the server runs with an option that refuses the statement (read_only, or another)", HostFault(readOnly))
	assert.Equal(t, "the server's InnoDB runs read-only (innodb_read_only)", HostFault(wrap(1874, "InnoDB is in read only mode.")))
	assert.Equal(t, "the server's InnoDB runs with innodb_force_recovery, which refuses changes",
		HostFault(wrap(1881, "Operation not allowed when innodb_forced_recovery > 0.")))
	refused := wrap(1142, "CREATE command denied to user 'x'@'localhost' for table `d`.`t`")
	assert.True(t, Is(refused))
	assert.Empty(t, HostFault(refused))
	for name, err := range map[string]error{
		"a schema mismatch":      wrap(1808, "Schema mismatch (Expected FSP_SPACE_FLAGS=0x15, .ibd file contains 0x21.)"),
		"a corrupted tablespace": wrap(1030, "Got error 194 \"Tablespace is missing for a table\" from storage engine InnoDB"),
		"a lost connection":      fmt.Errorf("ALTER TABLE d.t IMPORT TABLESPACE: %w", mysql.ErrInvalidConn),
	} {
		assert.False(t, Is(err), name)
		assert.Empty(t, HostFault(err), name)
	}
}

// TestRefusedToUser: a privilege refused is what granting mends; a
// statement the server refuses for its own state (an InnoDB read-only
// table, 1005 errno 165) or settings is not.
func TestRefusedToUser(t *testing.T) {
	assert.True(t, RefusedToUser(fmt.Errorf("probe: %w", &mysql.MySQLError{Number: 1142, Message: "CREATE command denied to user"})))
	assert.False(t, RefusedToUser(fmt.Errorf("probe: %w", &mysql.MySQLError{Number: 1005, Message: `Can't create table (errno: 165 "Table is read only")`})))
	assert.False(t, RefusedToUser(errors.New("denied")))
}
