package fifobackupengine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// A work directory's name says which process made it, with a check that
// proves it was made by this code (mkdir is one step; the owner record
// beside it is a second, and a process killed between the two, or while
// writing the record, leaves a directory whose record is missing or empty):
//
//	fifo-backup-<pid>-<start time>-<16 hex nonce><16 hex check>
//
// The check covers the prefix, pid, start time and nonce, and the host, boot
// and PID namespace the process ran in: a name whose check holds here was
// made on this host, in this boot and PID namespace, by that process. Names
// of another host, boot or namespace, and any name this code did not make,
// prove nothing and are judged by their owner record alone.

// mkWorkDir creates a new work directory under parent named for self.
func mkWorkDir(parent, prefix string, self procident.Owner) (string, error) {
	return createNamed(parent, prefix, self, func(p string) error { return os.Mkdir(p, 0o700) })
}

// createNamed makes a new entry under parent named prefix and then for self
// (workDirName, a fresh nonce each try), by create, which fails with
// os.ErrExist for a name taken; it returns the entry's path.
func createNamed(parent, prefix string, self procident.Owner, create func(path string) error) (string, error) {
	for range 16 {
		var nonce [8]byte
		_, _ = rand.Read(nonce[:])
		p := filepath.Join(parent, workDirName(prefix, self, hex.EncodeToString(nonce[:])))
		if err := create(p); !errors.Is(err, os.ErrExist) {
			return p, err
		}
	}
	return "", fmt.Errorf("cannot create %s* under %s: every name tried exists", prefix, parent)
}

func workDirName(prefix string, o procident.Owner, nonce string) string {
	return fmt.Sprintf("%s%d-%s-%s%s", prefix, o.PID, o.ProcStart, nonce, workDirCheck(prefix, o, nonce))
}

func workDirCheck(prefix string, o procident.Owner, nonce string) string {
	h := sha256.New()
	for _, s := range []string{"vtfifo work directory", prefix, strconv.Itoa(o.PID), o.ProcStart, nonce, o.Host, o.Boot, o.PIDNamespace} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// nameOwner is the process that made the work directory name, when its
// check holds as seen from viewer (so: of viewer's host, boot and PID
// namespace).
func nameOwner(prefix, name string, viewer procident.Owner) (procident.Owner, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	fields := strings.Split(rest, "-")
	if !ok || len(fields) != 3 || len(fields[2]) != 32 || viewer.Host == "" {
		return procident.Owner{}, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return procident.Owner{}, false
	}
	o := procident.Owner{Host: viewer.Host, Boot: viewer.Boot, PIDNamespace: viewer.PIDNamespace, PID: pid, ProcStart: fields[1]}
	nonce := fields[2][:16]
	if name != workDirName(prefix, o, nonce) {
		return procident.Owner{}, false
	}
	return o, true
}
