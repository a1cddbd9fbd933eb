package fifobackupengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// restoringMark is the file a restore keeps in its target directory while
// it writes there (markBody): a restore killed before it finished leaves
// it, so that the next one into the directory can say what is there
// (NotEmptyReason) instead of only that it is not empty. Nothing removes
// such a directory but the operator. The mark is the last thing a restore
// removes: a directory without it is whole.
const restoringMark = ".vtfifo-restoring"

// markVersion 1: a mark without MovingUp says that the restore moved
// nothing up. Marks of earlier versions (0) did not list what they moved.
const markVersion = 1

// markBody is the mark's content: the restore's process and, from the
// moment Done starts moving the files up, each entry it moves, by name and
// identity (entryID: a rename keeps it), so that a directory whose restore was
// stopped mid-way tells its entries from anyone else's.
type markBody struct {
	procident.Owner
	Version  int          `json:"mark_version,omitempty"`
	MovingUp []movedEntry `json:"moving_up,omitempty"`
}

type movedEntry struct {
	Name string `json:"name"`
	entryID
}

// mark creates the restore's mark in the directory, exclusively: of two
// restores that found one directory empty at once, the second is refused
// (as into a directory that is not empty) instead of writing beside the
// first, whose files its failure would remove.
func (d *TargetDir) mark() error {
	var f *os.File
	err := d.madeHere(restoringMark, func(p string) (err error) {
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		return err
	})
	if errors.Is(err, os.ErrExist) {
		return notEmpty(d.Path)
	}
	if f != nil {
		err = errors.Join(err, json.NewEncoder(f).Encode(markBody{Owner: procident.Self(), Version: markVersion}), f.Close())
	}
	if err != nil {
		_ = d.RemoveRestored()
		return hostsDir(errtext.Wrapf(err, "cannot write into the target directory %s", d.Path))
	}
	return nil
}

// listMovingUp rewrites the mark to list the entries Done is about to move
// up, before it moves the first: written in the restore's own subdirectory,
// then renamed over the mark (only while the mark is still the restore's
// own), so the mark is whole at every instant. Against a kill, that is all
// it takes; nothing is fsynced (nor are the restored files: a restore cut
// by a power loss is not whole, mark or not), as an fsync on a busy host
// waits for everyone's writes.
func (d *TargetDir) listMovingUp(entries []os.DirEntry) error {
	body := markBody{Owner: procident.Self(), Version: markVersion, MovingUp: []movedEntry{}}
	for _, e := range entries {
		id, err := idOf(filepath.Join(d.Files(), e.Name()))
		if err != nil {
			return err
		}
		body.MovingUp = append(body.MovingUp, movedEntry{Name: e.Name(), entryID: id})
	}
	doc, err := json.Marshal(body)
	if err != nil {
		return err
	}
	next := filepath.Join(d.Path, restoringDir, restoringMark)
	if err := os.WriteFile(next, doc, 0o640); err != nil {
		return err
	}
	i := slices.IndexFunc(d.made, func(m madeEntry) bool { return m.name == restoringMark })
	markPath := filepath.Join(d.Path, restoringMark)
	if i < 0 || !d.made[i].id.isStill(markPath) {
		return fmt.Errorf("the restore's mark %s was removed or replaced during the restore", markPath)
	}
	if err := os.Rename(next, markPath); err != nil {
		return err
	}
	d.made[i].id, err = idOf(markPath)
	return err
}

// markReason says what a restore's mark in a target directory that is not
// empty shows ("; ..."): one killed before it finished, or one still
// writing there; "" without a mark.
func markReason(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, restoringMark))
	if err != nil {
		return ""
	}
	var m markBody
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	self := procident.Self()
	switch {
	case self.Outlived(m.Owner):
		return fmt.Sprintf("; it holds what a restore stopped before it finished left there (pid %d on %s, gone): no whole restore; %s",
			m.PID, m.Host, m.leftBehind(dir))
	case m.Host == self.Host && m.PIDNamespace == self.PIDNamespace && procident.Running(m.PID, m.ProcStart):
		return fmt.Sprintf("; a restore is writing into it now (pid %d)", m.PID)
	}
	return fmt.Sprintf("; a restore on %s (pid %d) wrote into it and did not finish, or still runs there", m.Host, m.PID)
}

// leftBehind says what to remove of what the stopped restore of this mark
// left in dir: its mark and subdirectory, and the entries it had moved up,
// each proven by the mark's list (still the very entry it moved); every
// other entry is named as not its own. Only an earlier version's mark,
// which lists nothing, leaves the others to the operator's judgement.
func (m markBody) leftBehind(dir string) string {
	var own, movedUp, others []string
	for _, p := range (TargetDir{Path: dir}).Leftovers() {
		if _, err := os.Lstat(p); err == nil {
			own = append(own, p)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		i := slices.IndexFunc(m.MovingUp, func(moved movedEntry) bool { return moved.Name == e.Name() })
		switch {
		case e.Name() == restoringMark || e.Name() == restoringDir:
		case i >= 0 && m.MovingUp[i].isStill(filepath.Join(dir, e.Name())):
			movedUp = append(movedUp, e.Name())
		default:
			others = append(others, e.Name())
		}
	}
	again := " and restore again, or give another directory"
	switch {
	case m.Version < markVersion:
		return "remove what it left (rm -rf " + strings.Join(own, " ") + othersBeside(others) + ")" + again
	case len(movedUp) > 0 && len(others) == 0:
		return fmt.Sprintf("everything in it is what that restore left (%s, and %s, each still the very one it moved): empty it "+
			"(find %s -mindepth 1 -delete)%s", strings.Join(own, " "), entriesNamed(movedUp, "", " it had moved up"), dir, again)
	}
	advice := "remove what it left (rm -rf " + strings.Join(own, " ")
	if len(movedUp) > 0 {
		advice += ", and " + entriesNamed(movedUp, "", " it had moved up") + ", each still the very one it moved"
	}
	advice += ")" + again
	if len(others) > 0 {
		advice += fmt.Sprintf("; %s %s not that restore's: keep %s", entriesNamed(others, "other ", " there"), plural(others, "is", "are"),
			plural(others, "it", "them"))
	}
	return advice
}

// othersBeside names, for the advice on what a stopped restore of an
// earlier version left, the other entries of its directory: those it moved
// up before it was stopped, or anyone's, which its mark cannot tell apart
// ("" when there are none).
func othersBeside(others []string) string {
	if len(others) == 0 {
		return ""
	}
	return ", and of " + entriesNamed(others, "other ", " there") + " what the restore had moved up"
}

// entriesNamed is "the entry<where> (x)" or "the 7 entries<where> (a, b,
// c, d, e and 2 more)", each with what before "entr".
func entriesNamed(names []string, what, where string) string {
	if len(names) == 1 {
		return "the " + what + "entry" + where + " (" + names[0] + ")"
	}
	shown := names[:min(len(names), 5)]
	more := ""
	if len(names) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return fmt.Sprintf("the %d %sentries%s (%s%s)", len(names), what, where, strings.Join(shown, ", "), more)
}

func plural(names []string, one, many string) string {
	if len(names) == 1 {
		return one
	}
	return many
}
