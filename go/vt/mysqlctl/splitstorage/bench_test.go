package splitstorage_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// BenchmarkThroughput writes and reads back 2 files of SPLIT_BENCH_FILE_MIB
// (default 1024) MiB, written by 2 goroutines at once (two engine lanes),
// against local disk and versitygw, for part sizes 8 MiB .. 1 GiB and upload
// concurrency 1 .. 16 (8 MiB read-ahead per file). Reported: write MB/s (the ns/op figure), read MB/s, objects per GiB, peak heap.
//
//	go test -run '^$' -bench BenchmarkThroughput -benchtime 1x -timeout 60m ./go/vt/mysqlctl/splitstorage/
func BenchmarkThroughput(b *testing.B) {
	fileMiB := int64(1024)
	if v := os.Getenv("SPLIT_BENCH_FILE_MIB"); v != "" {
		fmt.Sscan(v, &fileMiB)
	}
	for _, kind := range splitstoragetest.LocalAndRemote() {
		b.Run(kind, func(b *testing.B) {
			srv := splitstoragetest.Start(b, kind)
			srv.Setenv(b)
			for _, partMiB := range []int64{8, 16, 64, 256, 1024} {
				for _, conc := range []int{1, 4, 16} {
					b.Run(fmt.Sprintf("part=%dMiB/conc=%d", partMiB, conc), func(b *testing.B) {
						c := srv.Config
						c.PartSize = partMiB << 20
						c.UploadConcurrency = conc
						c.ReadAhead = 8 << 20
						c.RequestTimeout = time.Minute
						s, err := splitstorage.New(c)
						if err != nil {
							b.Fatal(err)
						}
						defer s.Close()
						benchOnce(b, s, 2, fileMiB<<20, partMiB<<20, 1<<20)
					})
				}
			}
		})
	}
}

// BenchmarkEncryptionCost writes and reads back 2 files of
// SPLIT_BENCH_FILE_MIB (default 1024) MiB on local disk (64 MiB parts,
// upload concurrency 4), in the clear, with --split-storage-encryption-key-file,
// with --split-storage-signing-key-file (sealed: a tag per block, checked on
// read) and with both, and reports the CPU seconds per GiB of each side
// besides the throughput:
//
//	go test -run '^$' -bench EncryptionCost -benchtime 1x -count 5 ./go/vt/mysqlctl/splitstorage/
func BenchmarkEncryptionCost(b *testing.B) {
	fileMiB := int64(1024)
	if v := os.Getenv("SPLIT_BENCH_FILE_MIB"); v != "" {
		fmt.Sscan(v, &fileMiB)
	}
	srv := splitstoragetest.Local(b)
	for _, mode := range []string{"clear", "encrypted", "sealed", "sealed+encrypted"} {
		b.Run(mode, func(b *testing.B) {
			c := srv.Config
			c.PartSize = 64 << 20
			c.UploadConcurrency = 4
			if strings.Contains(mode, "encrypted") {
				c.EncryptionKeyFile = splitstoragetest.KeyFile(b, "bench")
			}
			if strings.Contains(mode, "sealed") {
				c.SigningKeyFile = splitstoragetest.KeyFile(b, "bench-sign")
			}
			s, err := splitstorage.New(c)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchOnce(b, s, 2, fileMiB<<20, c.PartSize, 1<<20)
		})
	}
}

// BenchmarkWriteSizes writes and reads back 2 files of SPLIT_BENCH_FILE_MIB
// (default 256) MiB on local disk in writes of 256 bytes (what a gzip or
// flate stream hands its writer at a time), 64 KiB and 1 MiB, and reports
// the CPU seconds per GiB of each side:
//
//	go test -run '^$' -bench WriteSizes -benchtime 1x -count 3 ./go/vt/mysqlctl/splitstorage/
func BenchmarkWriteSizes(b *testing.B) {
	fileMiB := int64(256)
	if v := os.Getenv("SPLIT_BENCH_FILE_MIB"); v != "" {
		fmt.Sscan(v, &fileMiB)
	}
	srv := splitstoragetest.Local(b)
	for _, size := range []int{256, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("write=%dB", size), func(b *testing.B) {
			c := srv.Config
			c.PartSize = 64 << 20
			s, err := splitstorage.New(c)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchOnce(b, s, 2, fileMiB<<20, c.PartSize, size)
		})
	}
}

// processCPU is this process's user+system time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchOnce writes nfiles files of size bytes at once, each in writes of
// writeSize bytes, reads them back and removes the backup.
func benchOnce(b *testing.B, s *splitstorage.Storage, nfiles int, size, partSize int64, writeSize int) {
	ctx := context.Background()
	total := int64(nfiles) * size
	b.SetBytes(total)
	var readDur, writeCPU, readCPU time.Duration
	var peak uint64
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		b.StartTimer()
		h := sampleHeap(10 * time.Millisecond)
		cpu := processCPU()
		bh, err := s.StartBackup(ctx, "bench/0", name)
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, nfiles)
		for f := range nfiles {
			wg.Go(func() {
				w, err := bh.AddFile(ctx, fmt.Sprint(f), size)
				if err != nil {
					errs <- err
					return
				}
				_, err = io.CopyBuffer(onlyWriter{w}, newGen(uint64(f), size), make([]byte, writeSize))
				if cerr := w.Close(); err == nil {
					err = cerr
				}
				errs <- err
			})
		}
		wg.Wait()
		if err := bh.EndBackup(ctx); err != nil {
			b.Fatal(err)
		}
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		writeCPU += processCPU() - cpu
		if reserved, live := s.SpoolForTest(ctx); reserved != 0 || live != 0 {
			b.Fatalf("spool: %d bytes still reserved, %d on disk after EndBackup", reserved, live)
		}
		start, cpu := time.Now(), processCPU()
		rbh := findBackupB(b, s, name)
		errs = make(chan error, nfiles)
		for f := range nfiles {
			wg.Go(func() {
				r, err := rbh.ReadFile(ctx, fmt.Sprint(f))
				if err != nil {
					errs <- err
					return
				}
				defer r.Close()
				_, err = io.Copy(io.Discard, r)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		readDur += time.Since(start)
		readCPU += processCPU() - cpu
		peak = max(peak, h.Stop()-base)
		if err := s.RemoveBackup(ctx, "bench/0", name); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total*int64(b.N))/(1<<20)/readDur.Seconds(), "read-MiB/s")
	b.ReportMetric(float64((1<<30+partSize-1)/partSize), "objects/GiB")
	gib := float64(total*int64(b.N)) / (1 << 30)
	b.ReportMetric(writeCPU.Seconds()/gib, "write-cpu-s/GiB")
	b.ReportMetric(readCPU.Seconds()/gib, "read-cpu-s/GiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB-over-baseline")
}

// onlyWriter hides a writer's ReadFrom, so io.CopyBuffer writes in its
// buffer's size.
type onlyWriter struct{ io.Writer }

func findBackupB(b *testing.B, s *splitstorage.Storage, name string) interface {
	ReadFile(context.Context, string) (io.ReadCloser, error)
} {
	bhs, err := s.ListBackups(context.Background(), "bench/0")
	if err != nil {
		b.Fatal(err)
	}
	for _, bh := range bhs {
		if bh.Name() == name {
			return bh
		}
	}
	b.Fatalf("backup %s not listed", name)
	return nil
}

// BenchmarkCloseTail is what closing a backup's files costs once the tool has
// written them: SPLIT_BENCH_FILES (default 16) files of SPLIT_BENCH_FILE_MIB
// (default 24) MiB, each one part at the default part size (a 1 GiB backup
// at 16 lanes), on local disk, with the spool on another file system
// (/dev/shm: every upload copies its part) and on the store's own (the
// default for file storage: every upload links its part). Reported: the
// milliseconds from the last write to the end of EndBackup (close-ms).
//
//	go test -run '^$' -bench CloseTail -benchtime 1x -count 5 ./go/vt/mysqlctl/splitstorage/
func BenchmarkCloseTail(b *testing.B) {
	files, fileMiB := 16, int64(24)
	if v := os.Getenv("SPLIT_BENCH_FILES"); v != "" {
		fmt.Sscan(v, &files)
	}
	if v := os.Getenv("SPLIT_BENCH_FILE_MIB"); v != "" {
		fmt.Sscan(v, &fileMiB)
	}
	for _, spool := range []string{"other-fs", "same-fs"} {
		b.Run("spool="+spool, func(b *testing.B) {
			srv := splitstoragetest.Local(b)
			c := srv.Config
			d := splitstorage.DefaultConfig()
			c.PartSize, c.UploadConcurrency = d.PartSize, d.UploadConcurrency
			if spool == "other-fs" {
				c.SpoolDir = "/dev/shm"
				if _, err := os.Stat(c.SpoolDir); err != nil {
					b.Skip("no /dev/shm")
				}
			}
			s, err := splitstorage.New(c)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			var closing time.Duration
			for i := 0; b.Loop(); i++ {
				bh, err := s.StartBackup(ctx, "bench/0", fmt.Sprintf("tail-%d", i))
				if err != nil {
					b.Fatal(err)
				}
				var written, wg sync.WaitGroup
				written.Add(files)
				errs := make(chan error, files)
				var mu sync.Mutex
				var lastWrite time.Time
				for f := range files {
					wg.Go(func() {
						w, err := bh.AddFile(ctx, fmt.Sprint(f), fileMiB<<20)
						if err == nil {
							_, err = io.CopyBuffer(onlyWriter{w}, newGen(uint64(f), fileMiB<<20), make([]byte, 1<<20))
						}
						mu.Lock()
						lastWrite = time.Now()
						mu.Unlock()
						written.Done()
						written.Wait() // every file written before any closes, as when the tool ends
						if err == nil {
							err = w.Close()
						}
						errs <- err
					})
				}
				wg.Wait()
				if err := bh.EndBackup(ctx); err != nil {
					b.Fatal(err)
				}
				closing += time.Since(lastWrite)
				close(errs)
				for err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if err := s.RemoveBackup(ctx, "bench/0", fmt.Sprintf("tail-%d", i)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms")
		})
	}
}
