package unreadable

import (
	"cmp"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

// This host failing at its part (its disk full, its memory or open files
// exhausted, a program it cannot start, a process killed from outside) is
// no proof about the backup either: Is counts it, and HostFault says which.

// hostErrnos are the OS's errors that say this host ran out of something
// or refuses to write, with what the FAIL line says of them.
var hostErrnos = map[syscall.Errno]string{
	syscall.ENOSPC: "its disk is full",
	syscall.EDQUOT: "a disk quota is reached",
	syscall.EROFS:  "a file system is read-only",
	syscall.ENOMEM: "it is out of memory",
	syscall.EMFILE: "the process has too many open files",
	syscall.ENFILE: "the system has too many open files",
}

// notAccessible is why a program refused a path is this host's: mysqld or
// the tool could not use a file or directory there.
const notAccessible = "a file or directory is not accessible to it here (its modes, AppArmor or SELinux)"

// hostMessages are the same errors as a program prints them (strerror, in
// the tool's and the server's own words: "Error number 28 means 'No space
// left on device'", "OS errno 24 - Too many open files"), and a permission
// it was refused.
var hostMessages = []struct{ text, why string }{
	{"No space left on device", "its disk is full"},
	// InnoDB's own words for a file it could not extend (os0file.cc:
	// "preallocating N bytes for file F failed with error 28", errno).
	{"failed with error 28", "its disk is full"},
	// The server's handler error 135 (HA_ERR_RECORD_FILE_FULL) on a write.
	{"No more room in record file", "a file cannot grow (its disk is full, or a size limit)"},
	{"Disk quota exceeded", "a disk quota is reached"},
	{"Read-only file system", "a file system is read-only"},
	// EIO from a disk or file system here, in InnoDB's words (os0file.cc,
	// os_file_get_last_error_low, MySQL 8 and MariaDB: "Operating system
	// error number 5 in a file operation", "Error number 5 means
	// 'Input/output error'"; run here only from a stand-in's output): the
	// files it reads were checked when they were written.
	{"Input/output error", "a disk or file system here failed (an input/output error)"},
	{"Cannot allocate memory", "it is out of memory"},
	{"Out of memory", "it is out of memory"},
	{"Too many open files", "too many open files"},
	{"Can't create a new thread", "it cannot start more threads"},
	// A socket or port another process holds (EADDRINUSE: "Bind on unix
	// socket: Address already in use"), and a socket path longer than a
	// Unix socket takes (mysqld.cc: "The socket file path is too long (>
	// 107)"): where this host's server listens, never what it reads.
	{"Address already in use", "a socket or port it needs is taken by another process"},
	{"The socket file path is too long", "a socket's path is longer than the 107 bytes a Unix socket takes (a shorter directory)"},
	// InnoDB giving up on Linux native AIO (MySQL 8's os0file.cc, after its
	// retries; MariaDB falls back to threads instead): the kernel's
	// fs.aio-max-nr used up by the servers and tools running at once.
	{"io_setup() failed with EAGAIN after", "the kernel's asynchronous I/O contexts are used up (fs.aio-max-nr: too many servers or tools at once)"},
	// mysqld or the tool refused a path it needs: this host's modes, or
	// AppArmor or SELinux confining mysqld to its usual directories.
	{"Permission denied", notAccessible},
	// InnoDB's own words for EACCES (os0file.cc: "The error means mysqld",
	// or MariaDB 10.11's "mariadbd", "does not have the access rights to the
	// directory"), and for a system tablespace file it may not write (MySQL
	// 8 and MariaDB: "The data file './ibdata1' must be writable"), which
	// print no strerror.
	{"does not have the access rights to the directory", notAccessible},
	{"' must be writable", notAccessible},
}

// Host marks err as this host's failure, why saying which ("its disk is
// full").
func Host(err error, why string) error {
	if err == nil {
		return nil
	}
	return hostError{err, why}
}

type hostError struct {
	err error
	why string
}

func (h hostError) Error() string    { return h.err.Error() }
func (h hostError) Unwrap() error    { return h.err }
func (h hostError) Unreadable() bool { return true }

// HostFault says why err, or anything it wraps, is this host's failure;
// "" when it is not.
func HostFault(err error) string {
	for _, e := range chain(err) {
		if why := hostWhy(e); why != "" {
			return why
		}
	}
	return ""
}

func hostWhy(e error) string {
	switch v := e.(type) {
	case hostError:
		return v.why
	case syscall.Errno:
		return hostErrnos[v]
	case *exec.Error:
		return "a program it needs cannot be started here"
	case *mysql.MySQLError:
		return serverStates[v.Number]
	}
	return ""
}

// InOutput says why a program's output shows this host failing (the OS's
// own message for a full disk, exhausted memory or open files); "" when it
// does not.
func InOutput(output string) string {
	for _, m := range hostMessages {
		if strings.Contains(output, m.text) {
			return m.why
		}
	}
	return ""
}

// InText is err marked as this host's where its words name this host
// running out of something (InOutput: a server's "Errcode: 24 \"Too many
// open files\"", "Out of memory"): no proof about the backup. An error
// already unreadable is left as it is.
func InText(err error) error {
	if err == nil || Is(err) {
		return err
	}
	if why := InOutput(err.Error()); why != "" {
		return Host(err, why)
	}
	return err
}

// ProgramFailed is err, a program's failure, marked as this host's where
// the program was killed from outside (Killed) or its output names the OS
// running out of room, memory or files (InOutput): no proof about what it
// read.
func ProgramFailed(err error, state *os.ProcessState, output string) error {
	if why := cmp.Or(Killed(state), InOutput(output)); why != "" {
		return Host(err, why)
	}
	return err
}

// Killed says why a program that exited with state was killed from outside
// (SIGKILL: the kernel's OOM killer, or an operator; SIGTERM: a shutdown);
// "" when it exited by itself or crashed (a crash, SIGSEGV or SIGABRT, may
// be what it read).
func Killed(state *os.ProcessState) string {
	if state == nil {
		return ""
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	switch ws.Signal() {
	case syscall.SIGKILL:
		return "a program was killed (SIGKILL: the kernel's OOM killer, or an operator)"
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP:
		return "a program was stopped (" + ws.Signal().String() + ")"
	}
	return ""
}
