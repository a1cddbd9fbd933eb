package tableimport

import (
	"fmt"
	"os"
	"path/filepath"
)

// dataFiles are the extensions of the data files of Aria (.MAD, .MAI),
// MyISAM (.MYD, .MYI) and CSV (.CSV, .CSM) tables.
var dataFiles = map[string]bool{".MAD": true, ".MAI": true, ".MYD": true, ".MYI": true, ".CSV": true, ".CSM": true}

// triggerFiles are MariaDB's trigger definitions beside a table's .frm
// (.TRG, and .TRN per trigger name): never copied in, the triggers are
// created from their definitions (Source.Triggers).
var triggerFiles = map[string]bool{".TRG": true, ".TRN": true}

// files builds the work table of a table whose files are the table
// (MariaDB's Aria, MyISAM and CSV, defined by a .frm, which holds no table
// name): its data files are copied in under the work table's name, then
// its .frm, by a link from a temporary name so that the server, which
// finds a table by its .frm, never sees part of one; FLUSH TABLES makes the
// server open the table anew.
func (im *importer) files() error {
	var frm string
	var data []string
	for _, f := range im.src.Files {
		switch ext := filepath.Ext(f); {
		case ext == ".frm":
			frm = f
		case dataFiles[ext]:
			data = append(data, f)
		case triggerFiles[ext]:
		default:
			return fmt.Errorf("%s.%s: %s is neither an InnoDB tablespace nor a file of an Aria, MyISAM or CSV table", im.src.DB, im.src.Table, f)
		}
	}
	if frm == "" || len(data) == 0 {
		return fmt.Errorf("%s.%s: no .ibd, and no .frm with data files, among its files %v", im.src.DB, im.src.Table, im.src.Files)
	}
	in := func(f string) string { return filepath.Join(im.dbDir, im.file+filepath.Ext(f)) }
	for _, f := range data {
		if err := copyFile(filepath.Join(im.src.Dir, filepath.FromSlash(f)), in(f), im.owner); err != nil {
			return err
		}
		im.copied = append(im.copied, in(f))
	}
	tmp := in(frm) + ".vtfifo-import"
	if err := copyFile(filepath.Join(im.src.Dir, filepath.FromSlash(frm)), tmp, im.owner); err != nil {
		return err
	}
	im.copied = append(im.copied, tmp)
	if err := os.Link(tmp, in(frm)); err != nil {
		return fmt.Errorf("%s: %w", im.work, err)
	}
	im.copied = append(im.copied, in(frm))
	im.created = append(im.created, im.work)
	os.Remove(tmp)
	return im.exec("FLUSH TABLES " + quoted(im.work))
}
