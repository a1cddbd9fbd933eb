package fifobackupengine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// Prefixes of the work directories: a backup's under the tablet's tmp dir, a
// restore's staging directory beside the data directory.
const (
	workDirPrefix    = "fifo-backup-"
	stagingDirPrefix = "fifo-restore-"
	deltaDirPrefix   = "fifo-delta-"
)

// ownerSuffix names the file beside a work directory (outside it: the tool
// owns the directory's content) that holds the pid of the process using it.
const ownerSuffix = ".owner"

// newWorkDir creates a work directory under parent, named for this process
// (mkWorkDir), after removing those of the same prefix left by dead
// processes, and records this process as its owner. Each run gets its own
// directory, so a tool left running by a killed run cannot write into the
// next one's files. release removes the directory and its owner record.
func newWorkDir(parent, prefix string, logger logutil.Logger) (dir string, release func(), err error) {
	return newOwnedDir(parent, prefix, "the work directory", os.RemoveAll, logger)
}

// newOwnedDir is newWorkDir with what the directory is called in a warning,
// and how it goes, at release and where a dead run left it: remove.
func newOwnedDir(parent, prefix, what string, remove func(dir string) error, logger logutil.Logger) (dir string, release func(), err error) {
	removeStaleWorkDirs(parent, prefix, remove, logger)
	dir, err = mkWorkDir(parent, prefix, procident.Self())
	if err != nil {
		return "", nil, err
	}
	unclaim, err := claimWorkDir(dir)
	release = func() {
		if err := remove(dir); err != nil {
			logger.Warningf("fifo: cannot remove %s %s: %s", what, dir, errtext.Text(err))
		}
		unclaim()
	}
	if err != nil {
		release()
		return "", nil, err
	}
	return dir, release, nil
}

// NewWorkDir is newWorkDir for the packages above the engine that start
// throwaway servers (go/vt/mysqlctl/testrestore): their scratch
// directories, too, are owned by a record and swept by the next run when
// the process that made one is gone.
func NewWorkDir(parent, prefix string, logger logutil.Logger) (dir string, release func(), err error) {
	return newWorkDir(parent, prefix, logger)
}

// MkdirClaimed makes a new directory under parent named prefix and a short
// random suffix, as os.MkdirTemp does (short: a server's socket goes in
// it), owned by this process (claimWorkDir), so that SweepStale removes it
// once this process is gone; the returned func removes the record (a
// directory kept on purpose is then left alone for good). The record is
// written first: a process killed between the two leaves a record without
// its directory, which the sweep removes, never a directory nothing claims.
func MkdirClaimed(parent, prefix string) (dir string, unclaim func(), err error) {
	for range 16 {
		dir = filepath.Join(parent, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		unclaim, err = claimWorkDir(dir)
		if errors.Is(err, os.ErrExist) {
			continue // another run's name
		}
		if err != nil {
			return "", nil, err
		}
		switch err = os.Mkdir(dir, 0o700); {
		case err == nil:
			return dir, unclaim, nil
		case errors.Is(err, os.ErrExist):
			unclaim() // a directory of that name without its record: not ours
		default:
			unclaim()
			return "", nil, err
		}
	}
	return "", nil, fmt.Errorf("cannot create a directory %s* under %s: every name tried exists", prefix, parent)
}

// SweepStale is removeStaleWorkDirs for the packages above the engine that
// own directories by MkdirClaimed: those named prefix* under parent whose owner
// record names a process provably gone go by remove.
func SweepStale(parent, prefix string, remove func(dir string) error, logger logutil.Logger) {
	removeStaleWorkDirs(parent, prefix, remove, logger)
}

// claimWorkDir records this process as the owner of dir (procident.Owner:
// its host, boot, PID namespace, PID and start time, so that a pid used
// again after a restart, vttablet is pid 1 again in a restarted container,
// or the same pid in another container, is not taken for the owner). The
// returned func removes the record.
func claimWorkDir(dir string) (func(), error) {
	f := dir + ownerSuffix
	doc, err := json.Marshal(procident.Self())
	if err != nil {
		return func() {}, err
	}
	// Never over another's: a record of that name is not this run's.
	rec, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return func() {}, err
	}
	if _, err := rec.Write(doc); err != nil {
		rec.Close()
		_ = os.Remove(f)
		return func() {}, err
	}
	if err := rec.Close(); err != nil {
		_ = os.Remove(f)
		return func() {}, err
	}
	return func() { _ = os.Remove(f) }, nil
}

// removeStaleWorkDirs removes the work directories named prefix* under
// parent left by runs whose process died without cleaning up (SIGKILL, OOM
// kill, power loss): those whose owner is provably gone (procident.Outlived:
// on this host, in an earlier boot, or in this boot and this PID namespace a
// process that no longer runs), and owner records left without their
// directory. The owner is the one the directory's owner record names, or,
// where the record is missing or cut short (a process killed between
// creating the directory and writing it), the one its name proves
// (mkWorkDir). A directory of neither, or whose owner lives, is left alone;
// so is one whose owner cannot be judged from here (another host's or
// container's on a shared directory, or a record of an earlier version,
// which names the PID only), saying so. remove is how a directory of a dead
// owner goes: whole (os.RemoveAll), or only what its kind of run made in it
// (the tool's FIFOs, removeFIFODir).
func removeStaleWorkDirs(parent, prefix string, remove func(dir string) error, logger logutil.Logger) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	self := procident.Self()
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if !e.IsDir() {
			removeOrphanRecord(parent, prefix, e.Name(), self)
			continue
		}
		dir := filepath.Join(parent, e.Name())
		owner, known := workDirOwner(prefix, dir, self, logger)
		if !known {
			continue
		}
		if !self.Outlived(owner) {
			if owner.Host != self.Host || owner.PIDNamespace != self.PIDNamespace {
				logger.Infof("fifo: left %s alone: its owner, pid %d on %s (%s), cannot be judged from this host and PID namespace", dir,
					owner.PID, owner.Host, owner.PIDNamespace)
			}
			continue
		}
		if err := remove(dir); err != nil {
			logger.Warningf("fifo: cannot remove %s left by dead process %d: %s", dir, owner.PID, errtext.Text(err))
			continue
		}
		_ = os.Remove(dir + ownerSuffix)
		logger.Infof("fifo: removed %s left by a run whose process (%d) is gone", dir, owner.PID)
	}
}

// removeOrphanRecord removes the owner record name whose directory is gone
// (its process was killed in release, between removing the directory and
// the record, or in MkdirClaimed, between the record and the directory),
// when it is provably ours (a record this code writes, or one beside a
// name mkWorkDir made; a file of that name is not proof) and its owner is
// provably gone: a live one's directory may be about to be made.
func removeOrphanRecord(parent, prefix, name string, self procident.Owner) {
	base, ok := strings.CutSuffix(name, ownerSuffix)
	if !ok {
		return
	}
	if _, err := os.Lstat(filepath.Join(parent, base)); !errors.Is(err, os.ErrNotExist) {
		return
	}
	owner, _, ours := ownerRecord(filepath.Join(parent, name))
	if !ours {
		var named bool
		if owner, named = nameOwner(prefix, base, self); !named {
			return
		}
	}
	if self.Outlived(owner) {
		_ = os.Remove(filepath.Join(parent, name))
	}
}

// workDirOwner is the process that owns dir: the one its owner record
// names, when the record is one this code writes, or else the one its name
// proves. known is false for a directory of neither (saying so when a
// record is there: an earlier version's, or not ours).
func workDirOwner(prefix, dir string, self procident.Owner, logger logutil.Logger) (owner procident.Owner, known bool) {
	owner, raw, ours := ownerRecord(dir + ownerSuffix)
	if ours {
		return owner, true
	}
	if named, ok := nameOwner(prefix, filepath.Base(dir), self); ok {
		return named, true
	}
	if raw != nil {
		logger.Warningf("fifo: left %s alone: its owner record (%q) is not one this version writes (an earlier version's names a pid "+
			"only, which proves nothing of its process now): remove it by hand if no backup or restore uses it", dir, strings.TrimSpace(string(raw)))
	}
	return owner, false
}

// ownerRecord reads the owner record at path: raw is nil when it cannot be
// read; ours says it is a record claimWorkDir writes (procident.Owner, a
// pid and its host).
func ownerRecord(path string) (owner procident.Owner, raw []byte, ours bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return owner, nil, false
	}
	if raw == nil {
		raw = []byte{}
	}
	ours = json.Unmarshal(raw, &owner) == nil && owner.PID > 0 && owner.Host != ""
	return owner, raw, ours
}

// StopMysqld is stopMysqld for the packages above the engine that run a
// server of their own through Vitess's mysqlctl (the self-test's scratch
// server, which an interrupted start leaves as a tablet's restore would).
func StopMysqld(ctx context.Context, cnf *mysqlctl.Mycnf, timeout time.Duration, shutdown func(context.Context) error, logger logutil.Logger) error {
	return stopMysqld(ctx, cnf, timeout, shutdown, logger)
}

// EndMysqld ends every local process started with cnf's my.cnf: SIGTERM to
// each mysqld, its clean shutdown, which needs no account where a shutdown
// through the server needs one (a server whose start was cut short has
// none yet); after grace, SIGKILL to what is left, mysqld_safe first so
// that it starts no other. It fails naming what is still there after that.
// Only for a throwaway server that StopMysqld could not stop: a tablet's
// mysqld is never killed.
func EndMysqld(cnf *mysqlctl.Mycnf, grace time.Duration) error {
	for _, p := range tabletProcesses(cnf) {
		if safeFirst(p) != 0 {
			_ = syscall.Kill(p.Pid, syscall.SIGTERM)
		}
	}
	if waitMysqldGone(cnf, grace) {
		return nil
	}
	left := tabletProcesses(cnf)
	slices.SortStableFunc(left, func(a, b localProcess) int { return cmp.Compare(safeFirst(a), safeFirst(b)) })
	for _, p := range left {
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
	}
	if waitMysqldGone(cnf, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("processes of %s still running after SIGKILL: %s", cnf.Path, joinProcesses(tabletProcesses(cnf)))
}

// waitMysqldGone waits at most timeout until no local process started
// with cnf's my.cnf is left, and says whether none is.
func waitMysqldGone(cnf *mysqlctl.Mycnf, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); len(tabletProcesses(cnf)) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// safeFirst orders mysqld_safe (mariadbd-safe) before the mysqld it watches.
func safeFirst(p localProcess) int {
	for _, a := range p.Argv {
		if name := filepath.Base(a); name == "mysqld_safe" || name == "mariadbd-safe" {
			return 0
		}
	}
	return 1
}

// stopMysqld stops the tablet's mysqld through shutdown (Vitess's
// Mysqld.Shutdown) and returns once none of its processes is left, or fails
// after timeout naming them. Shutdown alone is not enough before the data
// directory is deleted: it returns at once when there is neither socket nor
// pid file, which is also the state of a mysqld still starting (started by a
// restore that was killed meanwhile: its mysqld_safe outlives it, as mysqld
// outlives vttablet); and a mysqld shutting down removes its socket first and
// writes its files until it exits. So it also waits for the process in the
// pid file and for every local process started with this tablet's my.cnf,
// asking again for a shutdown whenever a socket is there.
func stopMysqld(ctx context.Context, cnf *mysqlctl.Mycnf, timeout time.Duration, shutdown func(context.Context) error, logger logutil.Logger) error {
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	err := shutdown(ctx)
	asked := time.Now()
	for {
		left := tabletProcesses(cnf)
		_, socketErr := os.Stat(cnf.SocketFile)
		if len(left) == 0 && (err == nil || os.IsNotExist(socketErr)) {
			if err != nil {
				logger.Warningf("fifo restore: the shutdown command failed (%s), but no mysqld of this tablet is left; going on", errtext.Text(err))
			}
			return nil
		}
		if time.Now().After(deadline) {
			what := "its socket " + cnf.SocketFile + " is still there"
			if len(left) > 0 {
				what = "processes still running: " + joinProcesses(left)
			}
			if err != nil {
				what += "; the shutdown command failed: " + err.Error()
			}
			return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "mysqld of this tablet (%s) did not stop within %v of the request to shut down, so its "+
				"files were not deleted; %s", cnf.Path, timeout, what)
		}
		if socketErr == nil && time.Since(asked) > time.Second {
			// A mysqld that was starting listens now, or the last request failed.
			err = shutdown(ctx)
			asked = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tabletProcesses lists the live processes of the tablet's mysqld seen from
// here: every process started with its my.cnf (mysqld_safe, mysqld or
// mariadbd, a tool), and the process in its pid file when that is a mysqld
// (a stale pid file may name a recycled pid) or cannot be read.
func tabletProcesses(cnf *mysqlctl.Mycnf) []localProcess {
	left := processesWithArg("--defaults-file=" + cnf.Path)
	b, err := os.ReadFile(cnf.PidFile)
	if err != nil {
		return left
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || pid == os.Getpid() || slices.ContainsFunc(left, func(p localProcess) bool { return p.Pid == pid }) {
		return left
	}
	if p, ok := readProcess(pid); ok {
		if name := filepath.Base(p.Argv[0]); name == "mysqld" || name == "mariadbd" {
			left = append(left, p)
		}
	} else if procident.Alive(pid) {
		left = append(left, localProcess{Pid: pid, Argv: []string{"?"}})
	}
	return left
}

func joinProcesses(ps []localProcess) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
