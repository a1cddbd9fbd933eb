package vtfifocli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOperationsDocMatchesTheFlags: every flag docs/operations.md gives a
// command in its table row is one the command has, and every flag of the
// command's own (what --help lists, not the storage's) is in its row.
func TestOperationsDocMatchesTheFlags(t *testing.T) {
	doc, err := os.ReadFile("../../../../docs/operations.md")
	require.NoError(t, err)
	rowFlags := map[string][]string{}
	row := regexp.MustCompile("(?m)^\\| `vtfifo ([a-z-]+)[^|]*\\|.*$")
	flag := regexp.MustCompile(`--([a-z][a-z0-9-]+)`)
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		rowFlags[m[1]] = append(rowFlags[m[1]], []string{}...)
		for _, f := range flag.FindAllStringSubmatch(m[0], -1) {
			rowFlags[m[1]] = append(rowFlags[m[1]], f[1])
		}
	}
	helpFlag := regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--([a-z0-9-]+)`)
	for _, c := range commands() {
		var out, errOut bytes.Buffer
		helpAll := "--help-all"
		if c.use == "selftest" {
			helpAll = "--help" // it takes no storage or engine flags
		}
		require.Equal(t, 0, Main(context.Background(), []string{c.use, helpAll}, &out, &errOut), c.use)
		var all []string
		for _, m := range helpFlag.FindAllStringSubmatch(out.String(), -1) {
			all = append(all, m[1])
		}
		out.Reset()
		require.Equal(t, 0, Main(context.Background(), []string{c.use, "--help"}, &out, &errOut), c.use)
		documented, ok := rowFlags[c.use]
		if !assert.True(t, ok, "docs/operations.md has no row for vtfifo %s", c.use) {
			continue
		}
		for _, f := range documented {
			if !slices.Contains(all, f) && !othersFlag[f] && !strings.HasSuffix(f, "-") {
				t.Errorf("docs/operations.md gives vtfifo %s --%s, which it does not have", c.use, f)
			}
		}
		for _, m := range helpFlag.FindAllStringSubmatch(out.String(), -1) {
			if f := m[1]; !slices.Contains(documented, f) && !sharedCLIFlag[f] {
				t.Errorf("vtfifo %s --%s is not in its row of docs/operations.md", c.use, f)
			}
		}
	}
}

// othersFlag are the flags of other programs and commands the rows name:
// mysqld's, the backup tool's, verify's, vtbackup's, vttablet's.
var othersFlag = map[string]bool{"datadir": true, "export": true, "prepare": true, "skip-networking": true, "skip-grant-tables": true,
	"list-incomplete": true, "min-retention-count": true, "min-retention-time": true, "restore-from-backup-ts": true, "fifo-backup-test-restore": true}

// sharedCLIFlag are the flags every command takes, documented once in
// operations.md's introduction, not in each row.
var sharedCLIFlag = map[string]bool{"help-all": true, "flags-file": true, "config-file": true, "keyspace": true, "shard": true, "backup-dir": true,
	"backup": true, "log-level": true, "quiet": true, "timeout": true, "progress": true, "progress-interval": true, "concurrency": true}
