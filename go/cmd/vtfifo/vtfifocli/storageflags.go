package vtfifocli

import (
	"fmt"
	"strings"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// storageConfig builds a split storage's configuration apart from the
// process's own, from the --split-storage-* lines of flag files (other lines
// skipped: a tablet's flag file will do) and then single flags, as given to
// --<flag>-flags-file and --<flag>. The result is validated.
func storageConfig(flag string, files, flags []string) (splitstorage.Config, error) {
	var args []string
	for _, f := range files {
		pairs, err := readFlagsFile(f)
		if err != nil {
			return splitstorage.Config{}, fmt.Errorf("--%s-flags-file: %w", flag, err)
		}
		for _, p := range pairs {
			if strings.HasPrefix(p[1], "split-storage-") {
				args = append(args, "--"+p[1]+"="+p[2])
			}
		}
	}
	for _, f := range flags {
		if !strings.HasPrefix(f, "--split-storage-") {
			return splitstorage.Config{}, invalid(flag, f, "--split-storage-* flags")
		}
		args = append(args, f)
	}
	return splitstorage.ConfigFromArgs(args)
}
