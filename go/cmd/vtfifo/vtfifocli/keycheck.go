package vtfifocli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// keyCheckDoc is `vtfifo key-check`'s help.
var keyCheckDoc = commandDoc{"key-check", "List the key file's key IDs and, for every backup of a shard, whether the key file opens it",
	"Prints the key IDs of --split-storage-encryption-key-file (never a key), the first being the one that wraps\n" +
		"new backups, then every complete backup of the shard with the ID of the key that wraps its data key and\n" +
		"whether the key file unwraps it. Exit 1 when one does not: run it before a key leaves the file.",
	"  vtfifo key-check --flags-file=/etc/vitess/vttablet.flags --keyspace=commerce --shard=0"}

// KeyCheck is `vtfifo key-check`: the keys of the key file, and for every
// complete backup of a shard the key that wraps its data key and whether
// the key file opens it; before a key leaves the file, and in a disaster
// drill, it says which backups would become unreadable.
func KeyCheck(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var asJSON *bool
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			asJSON = fs.Bool("json", false, "print one JSON object (key_file, keys, backups with key and problem) instead of lines")
			return o.refuseBackup(fs, "key-check", "it checks every backup of the shard")
		})
	if s == nil {
		return code
	}
	defer s.close()
	st, err := can[keyLister](s.bs, "name its encryption keys")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	bhs, code := s.shardBackups()
	if code != exitOK {
		return code
	}
	var res KeyCheckResult
	if res.Keys, res.KeyFile, err = st.Keys(s.ctx); err != nil {
		return s.o.failf(exitUnreachable, "cannot open %s: %v", storageLocation(s.o), err)
	}
	for _, bh := range bhs {
		b := KeyCheckBackup{Backup: s.o.dir() + "/" + bh.Name()}
		if h, ok := has[keyChecker](bh); ok {
			if b.Key, err = h.CheckKey(s.ctx); err != nil {
				b.Problem, code = errtext.Line(err), exitFailed
			}
		}
		res.Backups = append(res.Backups, b)
	}
	if *asJSON {
		writeJSON(stdout, res)
	} else {
		res.print(stdout)
	}
	return code
}

// KeyCheckResult is what key-check found (--json prints it).
type KeyCheckResult struct {
	KeyFile string           `json:"key_file,omitempty"`
	Keys    []string         `json:"keys"` // the current one first
	Backups []KeyCheckBackup `json:"backups"`
}

// KeyCheckBackup is one backup: the ID of the key that wraps its data key
// ("" in the clear), and why the key file does not unwrap it.
type KeyCheckBackup struct {
	Backup  string `json:"backup"`
	Key     string `json:"key,omitempty"`
	Problem string `json:"problem,omitempty"`
}

func (r KeyCheckResult) print(w io.Writer) {
	switch {
	case r.KeyFile == "":
		fmt.Fprintln(w, "no key file (--split-storage-encryption-key-file): new backups are written in the clear")
	default:
		fmt.Fprintf(w, "key file %s: %d keys: %s (wraps new backups)", r.KeyFile, len(r.Keys), r.Keys[0])
		if len(r.Keys) > 1 {
			fmt.Fprintf(w, ", %s", strings.Join(r.Keys[1:], ", "))
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKUP\tKEY\tOPENS")
	for _, b := range r.Backups {
		key, opens := b.Key, "yes"
		switch {
		case b.Problem != "":
			opens = "NO: " + b.Problem
		case key == "":
			key, opens = "-", "in the clear"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Backup, key, opens)
	}
	tw.Flush()
}
