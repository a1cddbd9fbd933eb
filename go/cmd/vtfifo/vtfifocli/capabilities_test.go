package vtfifocli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCapabilitiesNameTheStorage: a command that needs what only the split
// storage does, run on Vitess's file storage, is a usage error (exit 2)
// that names the storage in use and what it cannot do (verify's flags for
// it are refused at startup, naming them).
func TestCapabilitiesNameTheStorage(t *testing.T) {
	_, args := storageCopy(t) // --backup-storage-implementation=file, ks/0
	fileOnly := make([]string, 0, len(args))
	for _, a := range args {
		if !strings.HasPrefix(a, "--keyspace") && !strings.HasPrefix(a, "--shard") {
			fileOnly = append(fileOnly, a)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"key-check"}, args...), "the file storage cannot name its encryption keys: that needs the split storage (--backup-storage-implementation=split)"},
		{append([]string{"release", "--backup=2026-11-23.050519.zone1-0000004989"}, args...), "the file storage cannot release a quarantined backup: that needs the split storage (--backup-storage-implementation=split)"},
		{append([]string{"copy", "--to=--split-storage-root=" + t.TempDir()}, args...), "the file storage cannot copy a backup: that needs the split storage (--backup-storage-implementation=split)"},
		{append([]string{"verify", "--list-incomplete"}, args...), "--list-incomplete and --remove-incomplete need --backup-storage-implementation=split (it is file)"},
		{append([]string{"ls"}, fileOnly...), "the file storage cannot list its shards (give --keyspace and --shard): that needs the split storage (--backup-storage-implementation=split)"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, Main(context.Background(), c.args, &stdout, &stderr), "%v: %s", c.args, stderr.String())
		assert.Contains(t, stderr.String(), c.want, c.args)
	}
}
