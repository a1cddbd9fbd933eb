package tableimport

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Movable makes the Aria tables among files (paths relative to dir, as in
// Source.Files) movable to any server with aria_chk --zerofill, which zeroes
// their unused space and their log sequence numbers; the server that opens
// such a table gives it new ones. Without it a server other than the source
// refuses to check the table until it is zero-filled, and the source server
// itself could, in a crash recovery, apply its own log of the dropped table
// to the table imported in its place.
//
// mariabackup copies Aria tables while they change, with Aria's log; a
// server started on the restored files (testrestore.Definitions) brings them
// to the backup's end with Aria's recovery and closes them when it stops.
// Movable checks that each was closed so (aria_chk -dv) before it touches
// it: zero-filling a table that still needs its log would lose that log.
// ariaChk is the aria_chk binary; other files are left alone.
func Movable(ctx context.Context, ariaChk, dir string, files []string) error {
	for _, f := range files {
		if filepath.Ext(f) != ".MAI" {
			continue
		}
		table := strings.TrimSuffix(filepath.FromSlash(f), ".MAI")
		out, err := ariaChkRun(ctx, ariaChk, dir, "-dv", table)
		if err != nil {
			return err
		}
		status := ariaStatus(out)
		if status == nil {
			return fmt.Errorf("%s: %s -dv printed no Status line:\n%s", f, ariaChk, out)
		}
		if slices.Contains(status, "open") || slices.Contains(status, "crashed") {
			return fmt.Errorf("%s: the Aria table was not closed cleanly (status %s): it needs Aria's recovery, which a server started on %s runs, before "+
				"it can be imported", f, strings.Join(status, ","), dir)
		}
		if _, err := ariaChkRun(ctx, ariaChk, dir, "--zerofill", "--silent", table); err != nil {
			return err
		}
	}
	return nil
}

// ariaChkRun runs aria_chk in dir, where the restore's aria_log_control is.
func ariaChkRun(ctx context.Context, ariaChk, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, ariaChk, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", ariaChk, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ariaStatus returns the words of the Status line of aria_chk -dv.
func ariaStatus(out string) []string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Status:"); ok {
			return strings.Split(strings.TrimSpace(v), ",")
		}
	}
	return nil
}
