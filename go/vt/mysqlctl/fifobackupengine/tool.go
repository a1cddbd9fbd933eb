package fifobackupengine

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/shlex"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// backupTool is the detected xtrabackup or mariabackup binary.
type backupTool struct {
	Path    string
	Flavor  string // FlavorXtrabackup or FlavorMariabackup
	Version string // the tool's own --version line
	// major.minor.patch-build of Percona XtraBackup (0 for mariabackup; Build 0
	// when the line has none).
	Major, Minor, Patch, Build int
}

// fifoStreamsSince is the first Percona XtraBackup with --fifo-streams and the
// control byte (PXB-2514, released in 8.0.33-28; 8.0.33-27 refuses the option).
var fifoStreamsSince = [4]int{8, 0, 33, 28}

var (
	// "xtrabackup version 8.0.35-30 based on MySQL server 8.0.35 ..." (print_version, on stderr).
	xtrabackupVersionRe = regexp.MustCompile(`xtrabackup version (\d+)\.(\d+)\.(\d+)(?:-(\d+))?`)
	mariabackupRe       = regexp.MustCompile(`(?i)maria(db)?-?backup|MariaDB`)
)

// detectTool finds the tool and reads its flavor and version from --version.
// A flavor given by flag wins over detection, but the version still decides
// whether FIFO streams can be used. Its errors are the host contradicting
// the flags (no tool, or not the one named): never proof about a backup.
func detectTool(ctx context.Context, cfg *Config) (*backupTool, error) {
	t, err := findTool(ctx, cfg)
	if err != nil && ctx.Err() == nil {
		return nil, flagvalue.Contradiction(err)
	}
	return t, err
}

func findTool(ctx context.Context, cfg *Config) (*backupTool, error) {
	path := cfg.ToolPath
	if path == "" {
		for _, name := range []string{"xtrabackup", "mariabackup"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
		if path == "" {
			return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "no backup tool found: neither xtrabackup nor mariabackup is in PATH; set "+
				"--fifo-backup-tool-path")
		}
	} else if p, err := exec.LookPath(path); err == nil {
		path = p
	} else {
		return nil, errtext.Wrapf(err, "--fifo-backup-tool-path %q is not an executable", path)
	}

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := newToolCommand(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return nil, errtext.Wrapf(err, "cannot run %s --version: %s", path, strings.TrimSpace(string(out)))
	}
	t, err := parseToolVersion(path, string(out))
	if err != nil {
		return nil, err
	}
	if cfg.ToolFlavor != "" && cfg.ToolFlavor != t.Flavor {
		return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "--fifo-backup-tool-flavor is %s but %s says it is %s (%s)", cfg.ToolFlavor, path,
			t.Flavor, t.Version)
	}
	return t, nil
}

// ToolInfo is what the engine found of the backup tool.
type ToolInfo struct {
	Path, Flavor, Version string
	// FIFOStreams: the tool has Percona's --fifo-streams.
	FIFOStreams bool
	// CheckTables: its --prepare takes --check-tables.
	CheckTables bool
	// Extractor is its stock extractor (xbstream or mbstream) where found
	// beside it or in PATH; "" when neither is.
	Extractor string
}

// DescribeTool finds the tool as a backup would (cfg.ToolPath, else PATH)
// and says what it is.
func DescribeTool(ctx context.Context, cfg Config) (ToolInfo, error) {
	t, err := detectTool(ctx, &cfg)
	if err != nil {
		return ToolInfo{}, err
	}
	info := ToolInfo{Path: t.Path, Flavor: t.Flavor, Version: t.Version, FIFOStreams: t.supportsFIFO(), CheckTables: t.hasCheckTables()}
	for _, name := range []string{"xbstream", "mbstream"} {
		if p, err := exec.LookPath(filepath.Join(filepath.Dir(t.Path), name)); err == nil {
			info.Extractor = p
			break
		}
		if p, err := exec.LookPath(name); err == nil {
			info.Extractor = p
			break
		}
	}
	return info, nil
}

// parseToolVersion understands both tools' --version output, for example
// "xtrabackup version 8.0.35-30 based on MySQL server 8.0.35 Linux (x86_64)"
// and "mariabackup based on MariaDB server 10.11.6-MariaDB debian-linux-gnu".
func parseToolVersion(path, out string) (*backupTool, error) {
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "version") || strings.Contains(l, "based on") {
			line = strings.TrimSpace(l)
			break
		}
	}
	t := &backupTool{Path: path, Version: line}
	if m := xtrabackupVersionRe.FindStringSubmatch(out); m != nil {
		t.Flavor = FlavorXtrabackup
		t.Major, _ = strconv.Atoi(m[1])
		t.Minor, _ = strconv.Atoi(m[2])
		t.Patch, _ = strconv.Atoi(m[3])
		t.Build, _ = strconv.Atoi(m[4])
		return t, nil
	}
	if mariabackupRe.MatchString(out) {
		t.Flavor = FlavorMariabackup
		return t, nil
	}
	return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "cannot tell the flavor of %s from its --version output %q; set "+
		"--fifo-backup-tool-flavor", path, strings.TrimSpace(out))
}

// toolReleaseRe finds the tool's own release in its version line: after
// "version" (Percona's "xtrabackup version 8.0.35-30 based on MySQL server
// 8.0.35": PXB storage/innobase/xtrabackup/src/xtrabackup.cc, print_version,
// "%s version %s based on MySQL server %s %s (%s) (revision id: %s)") or
// "server" (mariabackup's, which is its server's: "based on MariaDB server
// 10.11.6-MariaDB"), not in the path it was run by (%s is my_progname).
var toolReleaseRe = regexp.MustCompile(`(?:version|server) (\d+\.\d+\.\d+)`)

// toolRelease is the MAJOR.MINOR.PATCH of a tool's version line; "" when it
// has none.
func toolRelease(line string) string {
	if m := toolReleaseRe.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// supportsFIFO reports whether the tool has --fifo-streams: the version with
// its build number, so that 8.0.33-27 (or a line without a build) is not taken
// for 8.0.33-28.
func (t *backupTool) supportsFIFO() bool {
	if t.Flavor != FlavorXtrabackup {
		return false
	}
	v := [4]int{t.Major, t.Minor, t.Patch, t.Build}
	for i := range v {
		if v[i] != fifoStreamsSince[i] {
			return v[i] > fifoStreamsSince[i]
		}
	}
	return true
}

// sourceFor resolves the configured source against what the tool can do.
// Percona's --fifo-streams=1 means stdout, so one FIFO stream is stdout.
func (t *backupTool) sourceFor(cfg *Config) (string, error) {
	switch cfg.Source {
	case SourceStdout:
		return SourceStdout, nil
	case SourceFIFO:
		if !t.supportsFIFO() {
			return "", errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "--fifo-backup-source=fifo needs Percona XtraBackup >= 8.0.33-28, but %s is %q; "+
				"use --fifo-backup-source=stdout or auto", t.Path, t.Version)
		}
	default:
		if !t.supportsFIFO() {
			return SourceStdout, nil
		}
	}
	if cfg.streams() == 1 {
		return SourceStdout, nil
	}
	return SourceFIFO, nil
}

// backupArgs builds the tool's argv for a streaming backup. It never goes
// through a shell; extra flags are split like a shell would.
// openFiles (0: not passed) is the tool's --open-files-limit; flags in
// --fifo-backup-backup-flags come last, so an operator's own wins.
func (t *backupTool) backupArgs(cfg *Config, defaultsFile, socket, user, workDir, source, fifoDir string, openFiles uint64) ([]string, error) {
	if cfg.ReadBufferSize > 0 && t.Flavor == FlavorMariabackup {
		return nil, errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "--fifo-backup-read-buffer-size is set but %s is mariabackup (%s), which has no chunk "+
			"size setting; unset the flag", t.Path, t.Version)
	}
	args := []string{
		// --defaults-file must come first for both tools.
		"--defaults-file=" + defaultsFile,
		"--backup",
		"--socket=" + socket,
		"--slave-info",
		"--user=" + user,
		"--target-dir=" + workDir,
		"--extra-lsndir=" + workDir,
		"--stream=xbstream",
		fmt.Sprintf("--parallel=%d", parallel(cfg, source)),
	}
	if openFiles > 0 {
		args = append(args, fmt.Sprintf("--open-files-limit=%d", openFiles))
	}
	if cfg.ReadBufferSize > 0 {
		args = append(args, fmt.Sprintf("--read-buffer-size=%d", cfg.ReadBufferSize))
	}
	if source == SourceFIFO {
		args = append(args,
			fmt.Sprintf("--fifo-streams=%d", cfg.streams()),
			"--fifo-dir="+fifoDir,
			fmt.Sprintf("--fifo-timeout=%d", int(cfg.FIFOTimeout.Seconds())),
		)
	}
	extra, err := shlex.Split(cfg.BackupFlags)
	if err != nil {
		return nil, errtext.Wrap(err, "cannot split --fifo-backup-backup-flags")
	}
	return append(args, joinSecretValues(extra)...), nil
}

// parallel is the tool's --parallel: Percona raises it to --fifo-streams
// by itself (xtrabackup_backup_func); the engine says so in the argv.
func parallel(cfg *Config, source string) int {
	if source == SourceFIFO {
		return max(cfg.Parallel, cfg.streams())
	}
	return cfg.Parallel
}

// prepareStep is one --prepare of a restore: a full backup, or one delta of
// a chain applied to it.
type prepareStep struct {
	// DefaultsFile is the tool's --defaults-file: the host's option file, or
	// for mariabackup the one composed from it and the backup's own
	// (keysettings.go); empty reads no option file but, for mariabackup,
	// backup-my.cnf.
	DefaultsFile string
	TargetDir    string
	// OpenFiles as in backupArgs (0: not passed): applying the redo opens
	// tablespaces too.
	OpenFiles uint64
	// DeltaDir, when not empty, is an extracted incremental backup to apply.
	DeltaDir string
	// RedoOnly leaves out the rollback phase, as every prepare of a chain but
	// the last must (Percona's documentation on incremental backups).
	// mariabackup (10.2 and later) has no such option: its --prepare never
	// rolls back, the server does when it starts.
	RedoOnly bool
	// Export adds --export (both tools): a .cfg per .ibd for IMPORT
	// TABLESPACE, after a slow shutdown, so that the files need no undo or
	// change buffer (PXB xtrabackup.cc: xtrabackup_prepare_func, "export option
	// is specified"; MariaDB extra/mariabackup/xtrabackup.cc: prepare_export).
	Export bool
	// CheckTables asks the tool to validate every index's B-tree while it
	// prepares, where it can (PXB 8.4.0-6, 9.7.1: --check-tables).
	CheckTables bool
	// AriaLogInTarget has mariabackup read the backup's Aria log in the
	// target directory (--aria-log-dir-path), where DefaultsFile names
	// another (the live server's aria_log_dir_path, which a prepare must
	// never read or write).
	AriaLogInTarget bool
}

// Percona XtraBackup's option names for a prepare, by version: 8.4.0-8 and
// 9.7.2-2 renamed them (the old names warn; an old and a new name together
// are an error).
type prepareNames struct{ redoOnly, incrementalDir string }

var (
	oldPrepareNames = prepareNames{redoOnly: "--apply-log-only", incrementalDir: "--incremental-dir"}
	newPrepareNames = prepareNames{redoOnly: "--apply-redo-only", incrementalDir: "--prepare-incremental-from-dir"}
)

// Versions (major, minor, patch, build) from which a Percona XtraBackup
// series has a feature: the 8.4 series, then 9.7 and later.
var (
	renamedSince84     = [4]int{8, 4, 0, 8}
	renamedSince97     = [4]int{9, 7, 2, 2}
	checkTablesSince84 = [4]int{8, 4, 0, 6}
	checkTablesSince97 = [4]int{9, 7, 1, 0}
)

// since reports whether a Percona XtraBackup is at least in84 within the 8.4
// series, or at least in97 from 9.x on.
func (t *backupTool) since(in84, in97 [4]int) bool {
	if t.Flavor != FlavorXtrabackup {
		return false
	}
	v := [4]int{t.Major, t.Minor, t.Patch, t.Build}
	if t.Major >= 9 {
		return compareVersions(v, in97) >= 0
	}
	return t.Major == 8 && t.Minor == 4 && compareVersions(v, in84) >= 0
}

func compareVersions(a, b [4]int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}

func (t *backupTool) prepareNames() prepareNames {
	if t.since(renamedSince84, renamedSince97) {
		return newPrepareNames
	}
	return oldPrepareNames
}

// hasCheckTables reports whether --prepare takes --check-tables.
func (t *backupTool) hasCheckTables() bool { return t.since(checkTablesSince84, checkTablesSince97) }

// prepareDefaults are the option files a --prepare reads: step.DefaultsFile
// (for mariabackup the file writePrepareOptionFile composed, which holds the
// backup's backup-my.cnf), else for mariabackup the backup's backup-my.cnf
// alone, else none.
func (t *backupTool) prepareDefaults(step prepareStep) []string {
	switch {
	case step.DefaultsFile != "":
		return []string{"--defaults-file=" + step.DefaultsFile}
	case t.Flavor == FlavorMariabackup:
		return []string{"--defaults-file=" + filepath.Join(step.TargetDir, "backup-my.cnf")}
	}
	return []string{"--no-defaults"}
}

// prepareArgs builds the tool's argv for one --prepare (prepareStep).
// Not run against Percona XtraBackup here: checked as arguments and through
// the stand-in only.
func (t *backupTool) prepareArgs(cfg *Config, step prepareStep) ([]string, error) {
	names := t.prepareNames()
	args := append(t.prepareDefaults(step), "--prepare", "--target-dir="+step.TargetDir)
	if step.Export {
		args = append(args, "--export")
	}
	if step.RedoOnly && t.Flavor == FlavorXtrabackup {
		args = append(args, names.redoOnly)
	}
	if step.DeltaDir != "" {
		args = append(args, names.incrementalDir+"="+step.DeltaDir)
	}
	if step.CheckTables && t.hasCheckTables() {
		args = append(args, "--check-tables")
	}
	if step.AriaLogInTarget && t.Flavor == FlavorMariabackup {
		args = append(args, "--aria-log-dir-path="+step.TargetDir)
	}
	if step.OpenFiles > 0 {
		args = append(args, fmt.Sprintf("--open-files-limit=%d", step.OpenFiles))
	}
	if cfg.UseMemory > 0 {
		args = append(args, fmt.Sprintf("--use-memory=%d", cfg.UseMemory))
	}
	extra, err := shlex.Split(cfg.PrepareFlags)
	if err != nil {
		return nil, errtext.Wrap(err, "cannot split --fifo-backup-prepare-flags")
	}
	return append(args, joinSecretValues(extra)...), nil
}
