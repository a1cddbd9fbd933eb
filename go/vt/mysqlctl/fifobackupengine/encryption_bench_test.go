package fifobackupengine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// BenchmarkEncryption measures what --split-storage-encryption-key-file
// costs: the fifo engine backs up and restores the same data through the
// split storage on local disk, in the clear and encrypted, alternately, and
// prints the medians of wall and CPU seconds with the encrypted/clear ratio.
//
//	FIFO_BENCH_DATA_MB=1024 FIFO_BENCH_LANES=2,8 go test -run '^$' -bench Encryption \
//	  -benchtime 1x -timeout 60m ./go/vt/mysqlctl/fifobackupengine/
//
// FIFO_BENCH_DATA_MB (default 512), FIFO_BENCH_LANES (default "2,8"),
// FIFO_BENCH_REPEAT (default 3) and FIFO_BENCH_COMPRESSION (zstd, the
// default, or none: every byte of the data is then encrypted, the worst
// case) change the set-up.
func BenchmarkEncryption(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 512)
	repeat := envInt("FIFO_BENCH_REPEAT", 3)
	comp := CompressionConfig{Enabled: true, Engine: mysqlctl.ZstdCompressor, Level: 1, BlockSize: 250000, Blocks: 2}
	compName := "zstd level 1"
	if envString("FIFO_BENCH_COMPRESSION", "zstd") == "none" {
		comp, compName = CompressionConfig{}, "no compression"
	}
	lanes := envInts(b, "FIFO_BENCH_LANES", "2,8")
	f := newFixture(b, mariadbtest.Options{Tables: 200, BigTableBytes: int64(dataMB) << 20})
	storages := map[string]backupstorage.BackupStorage{}
	for _, mode := range []string{"clear", "encrypted"} {
		cfg := splitstorage.DefaultConfig()
		cfg.File.Root = b.TempDir()
		cfg.PartSize = 64 << 20
		if mode == "encrypted" {
			cfg.EncryptionKeyFile = splitstoragetest.KeyFile(b, "bench")
		}
		s, err := splitstorage.New(cfg)
		require.NoError(b, err)
		storages[mode] = s
	}
	old := backupstorage.BackupStorageMap["split-test"]
	b.Cleanup(func() { backupstorage.BackupStorageMap["split-test"] = old })

	samples := map[string][]measure{}
	var stored int64
	for _, n := range lanes {
		cfg := testConfig(n, SourceStdout, comp)
		cfg.Progress = 0
		for i := range repeat {
			modes := []string{"clear", "encrypted"}
			if i%2 == 1 {
				modes = []string{"encrypted", "clear"}
			}
			for _, mode := range modes {
				backupstorage.BackupStorageMap["split-test"] = storages[mode]
				f.storage = "split-test"
				timed := f.timedRoundTrip(b, engineName, cfg, nil)
				samples[fmt.Sprintf("%s/%d/backup", mode, n)] = append(samples[fmt.Sprintf("%s/%d/backup", mode, n)], timed.backup)
				samples[fmt.Sprintf("%s/%d/restore", mode, n)] = append(samples[fmt.Sprintf("%s/%d/restore", mode, n)], timed.restore)
				stored = f.latestManifest(b).StoredBytes
			}
		}
	}
	med := func(ms []measure) (wall, cpu float64) {
		var w, c []float64
		for _, m := range ms {
			w, c = append(w, m.wall.Seconds()), append(c, m.cpu.Seconds())
		}
		return median(w), median(c)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d MiB of data, %s, %d MiB stored (what is encrypted), split storage on local disk (64 MiB parts), medians of %d runs\n",
		dataMB, compName, stored>>20, repeat)
	fmt.Fprintf(&out, "%-8s %-3s %13s %13s %13s %13s %10s %10s\n", "OP", "N", "clear wall s", "clear cpu s", "enc wall s", "enc cpu s", "wall ratio", "cpu ratio")
	for _, n := range lanes {
		for _, op := range []string{"backup", "restore"} {
			cw, cc := med(samples[fmt.Sprintf("clear/%d/%s", n, op)])
			ew, ec := med(samples[fmt.Sprintf("encrypted/%d/%s", n, op)])
			fmt.Fprintf(&out, "%-8s %-3d %13.2f %13.2f %13.2f %13.2f %10.3f %10.3f\n", op, n, cw, cc, ew, ec, ew/cw, ec/cc)
		}
	}
	b.Log(out.String())
	fmt.Print(out.String())
}
