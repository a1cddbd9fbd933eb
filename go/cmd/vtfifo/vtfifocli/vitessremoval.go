package vtfifocli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// Vitess's own storages remove a backup by its whole directory or prefix
// (the file storage's RemoveBackup is os.RemoveAll), whatever else is
// there. Before vtfifo asks Vitess's file storage to, it proves the
// directory holds only the files the backup's MANIFEST names; anything
// else there, or no MANIFEST to say, refuses the removal and removes
// nothing. (Vitess's S3, GCS and Azure storages cannot be listed through
// Vitess's interface: docs/operations.md says what their removal takes.)

// onlyItsOwnFiles fails (a request the data refuses) when dir/name of
// Vitess's file storage holds a file its MANIFEST does not name.
func onlyItsOwnFiles(dir, name string) error {
	if backupstorage.BackupStorageImplementation != "file" {
		return nil
	}
	path := filepath.Join(filebackupstorage.FileBackupStorageRoot, filepath.FromSlash(dir), name)
	refuse := func(why string) error {
		return flagvalue.Contradiction(fmt.Errorf("backup %s/%s in Vitess's file storage (%s) %s; that storage removes a backup's whole directory, "+
			"so nothing was removed", dir, name, path, why))
	}
	doc, err := os.ReadFile(filepath.Join(path, "MANIFEST"))
	if errors.Is(err, os.ErrNotExist) {
		return refuse("has no MANIFEST to name its files (a backup that never finished?): remove it by hand once you know what it holds")
	}
	if err != nil {
		return err
	}
	files, err := fifobackupengine.BackupFiles(doc)
	if err != nil {
		return refuse(fmt.Sprintf("has a MANIFEST that does not name its files (%v): remove it by hand once you know what it holds", err))
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	var foreign []string
	for _, e := range entries {
		if e.IsDir() || !slices.Contains(files, e.Name()) {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) > 0 {
		return refuse(fmt.Sprintf("holds what its MANIFEST does not name (%d: %s): move it out, then remove the backup again", len(foreign),
			strings.Join(foreign[:min(len(foreign), 5)], ", ")))
	}
	return nil
}
