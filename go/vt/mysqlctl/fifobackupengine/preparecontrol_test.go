package fifobackupengine

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"vitess.io/vitess/go/vt/logutil"
)

// TestToolExitsAlikeOnlyInTheirDirectoriesAndTimes: a prepare and its
// control end alike only with the same exit status and the same whole
// output, the directories each was given and the times aside.
func TestToolExitsAlikeOnlyInTheirDirectoriesAndTimes(t *testing.T) {
	exit := func(code, dir string, lines ...string) toolExit {
		cmd := exec.Command("/bin/sh", "-c", "exit "+code)
		_ = cmd.Run()
		out := newTailLogger(logutil.NewMemoryLogger(), "", 3)
		for _, l := range lines {
			out.Write([]byte(l + "\n"))
		}
		return toolExit{state: cmd.ProcessState, out: out, dirs: []string{dir, ""}}
	}
	prepare := exit("7", "/data/r/.vtfifo-restoring.d/files", "[00] 2026-12-03 10:30:58 cd to /data/r/.vtfifo-restoring.d/files/",
		"2026-12-03T10:30:58.123456-00:00 0 [ERROR] [MY-011825] [Xtrabackup] unknown option '--no-such'")
	control := exit("7", "/data/r/.vtfifo-restoring.d/files/.vtfifo-prepare-control-1", "[00] 2026-12-03 10:31:07 cd to "+
		"/data/r/.vtfifo-restoring.d/files/.vtfifo-prepare-control-1/", "2026-12-03T10:31:07.5-00:00 0 [ERROR] [MY-011825] [Xtrabackup] unknown "+
		"option '--no-such'")
	assert.True(t, prepare.sameAs(control))
	assert.True(t, exit("3", "/a").sameAs(exit("3", "/b")), "no output at all")

	assert.False(t, prepare.sameAs(exit("1", "/c", "[00] 2026-12-03 10:31:07 cd to /c/", "2026-12-03T10:31:07.5-00:00 0 [ERROR] "+
		"[MY-011825] [Xtrabackup] unknown option '--no-such'")), "another exit status")
	assert.False(t, prepare.sameAs(exit("7", "/c", "[00] 2026-12-03 10:31:07 cd to /c/", "2026-12-03T10:31:07.5-00:00 0 [ERROR] "+
		"[MY-011825] [Xtrabackup] cannot open ./xtrabackup_checkpoints")), "other words")
	long := strings.Split("a b c d", " ")
	assert.False(t, exit("1", "/a", long...).sameAs(exit("1", "/b", long...)), "an output longer than is kept is never the same")
	assert.False(t, exit("1", "/a", long[1:]...).sameAs(exit("1", "/b", long...)), "the same last lines of a longer output")
}
