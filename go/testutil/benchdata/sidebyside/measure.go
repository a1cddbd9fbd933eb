package sidebyside

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cpuTime is user+system time of this process and of its waited-for
// children (the backup tool, mbstream, the stand-in).
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// resetPeakRSS frees what the Go heap can give back and resets this
// process's VmHWM to its current RSS (Linux >= 4.0: "5" > clear_refs).
func resetPeakRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return procStatusKB("self", "VmRSS:") << 10
}

func selfPeakRSS() int64 { return procStatusKB("self", "VmHWM:") << 10 }

func procStatusKB(pid, key string) int64 {
	return procField(filepath.Join("/proc", pid, "status"), key)
}

// bytesWritten is what process pid has written so far, to any file or pipe
// (/proc/PID/io's wchar); 0 once it is gone.
func bytesWritten(pid int) int64 { return procField(fmt.Sprintf("/proc/%d/io", pid), "wchar:") }

// procField is the number after key in a /proc file of "key value" lines.
func procField(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), key) {
			f := strings.Fields(s.Text())
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

type procInfo struct {
	pid, ppid int
	comm      string
	cpuTicks  int64
}

func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, false
	}
	s := string(b)
	open, closeIdx := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closeIdx < open {
		return procInfo{}, false
	}
	f := strings.Fields(s[closeIdx+1:])
	if len(f) < 13 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return procInfo{pid: pid, ppid: ppid, comm: s[open+1 : closeIdx], cpuTicks: ut + st}, true
}

// descendants returns the processes below this one.
func descendants() []procInfo {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]procInfo{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []procInfo
	var walk func(int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			out = append(out, c)
			walk(c.pid)
		}
	}
	walk(os.Getpid())
	return out
}

// servers are long-lived descendants that are not part of a run's work
// (their memory is not the tool's); the S3 server's CPU is reported apart.
var servers = []string{"mysqld_safe", "mysqld", "mariadbd", "versitygw"}

func isServer(comm string) bool { return slices.Contains(servers, comm) }

// sampler watches, while a run goes, the peak RSS (VmHWM) of every child
// process that is not a server, and the CPU of the S3 server.
type sampler struct {
	stop     chan struct{}
	done     sync.WaitGroup
	mu       sync.Mutex
	peak     map[int]int64
	comm     map[int]string
	runQueue map[int]time.Duration // the most seen, summed over the child's threads
	srvStart int64
}

func serverTicks() int64 {
	var n int64
	for _, p := range descendants() {
		if p.comm == "versitygw" {
			n += p.cpuTicks
		}
	}
	return n
}

func startSampler() *sampler {
	s := &sampler{stop: make(chan struct{}), peak: map[int]int64{}, comm: map[int]string{}, runQueue: map[int]time.Duration{}, srvStart: serverTicks()}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	skip := map[int]bool{}
	for _, p := range descendants() {
		if isServer(p.comm) || skip[p.ppid] {
			skip[p.pid] = true
			continue
		}
		kb := procStatusKB(strconv.Itoa(p.pid), "VmHWM:")
		wait := runQueueWait(p.pid)
		s.mu.Lock()
		if kb<<10 > s.peak[p.pid] {
			s.peak[p.pid] = kb << 10
			s.comm[p.pid] = p.comm
		}
		s.runQueue[p.pid] = max(s.runQueue[p.pid], wait)
		s.mu.Unlock()
	}
}

// finish returns the largest child peak RSS, its command name, and the S3
// server's CPU seconds during the run.
func (s *sampler) finish() (int64, string, float64) {
	close(s.stop)
	s.done.Wait()
	var best int64
	var comm string
	for pid, v := range s.peak {
		if v > best {
			best, comm = v, s.comm[pid]
		}
	}
	return best, comm, float64(serverTicks()-s.srvStart) / 100 // USER_HZ
}

// childRunQueue is how long the children's threads (the tool) waited for a
// CPU while runnable, as last sampled (call after finish): with more threads
// busy than cores, the tool waits beside the engine's compressors.
func (s *sampler) childRunQueue() float64 {
	var d time.Duration
	for _, w := range s.runQueue {
		d += w
	}
	return d.Seconds()
}

// runQueueWait sums the run-queue wait of pid's threads (schedstat's second
// field, nanoseconds; Linux with schedstats, else 0).
func runQueueWait(pid int) time.Duration {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var d time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if f := strings.Fields(string(b)); err == nil && len(f) >= 2 {
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			d += time.Duration(ns)
		}
	}
	return d
}

// goSchedLatencies is the runtime's histogram of how long goroutines waited
// to run once runnable (a reader woken late by the poller shows here).
func goSchedLatencies() *metrics.Float64Histogram {
	m := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindFloat64Histogram {
		return &metrics.Float64Histogram{}
	}
	return m[0].Value.Float64Histogram()
}

// schedWaitSince sums the waits recorded since before (each at its bucket's
// lower bound) and gives their 99th percentile.
func schedWaitSince(before *metrics.Float64Histogram) (sum, p99 float64) {
	after := goSchedLatencies()
	if len(before.Counts) != len(after.Counts) {
		return 0, 0
	}
	var total uint64
	delta := make([]uint64, len(after.Counts))
	for i := range after.Counts {
		delta[i] = after.Counts[i] - before.Counts[i]
		total += delta[i]
		if lo := after.Buckets[i]; !math.IsInf(lo, -1) {
			sum += float64(delta[i]) * lo
		}
	}
	var seen uint64
	for i, n := range delta {
		if seen += n; total > 0 && seen*100 >= total*99 {
			return sum, after.Buckets[i]
		}
	}
	return sum, 0
}

// diskSnapshot is each whole disk's sectors read and written and its
// milliseconds with I/O in flight (/proc/diskstats; partitions, loop and ram
// devices left out).
type diskSnapshot map[string][3]int64

func readDisks() diskSnapshot {
	b, _ := os.ReadFile("/proc/diskstats")
	snap := diskSnapshot{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 13 || strings.HasPrefix(f[2], "loop") || strings.HasPrefix(f[2], "ram") {
			continue
		}
		if _, err := os.Stat("/sys/block/" + f[2]); err != nil {
			continue // a partition
		}
		var v [3]int64
		for i, col := range []int{5, 9, 12} {
			v[i], _ = strconv.ParseInt(f[col], 10, 64)
		}
		snap[f[2]] = v
	}
	return snap
}

// diskUse is what the disks did since before: MB read and written (all
// disks), and the busiest disk's share of wall time with I/O in flight.
type diskUse struct {
	ReadMB  float64 `json:"read_mb"`
	WriteMB float64 `json:"write_mb"`
	Busy    float64 `json:"busiest"`
}

func diskSince(before diskSnapshot, wall float64) diskUse {
	var u diskUse
	for name, now := range readDisks() {
		was := before[name]
		u.ReadMB += float64(now[0]-was[0]) * 512 / 1e6
		u.WriteMB += float64(now[1]-was[1]) * 512 / 1e6
		if wall > 0 {
			u.Busy = max(u.Busy, float64(now[2]-was[2])/1e3/wall)
		}
	}
	return u
}

func (u diskUse) String() string {
	return fmt.Sprintf("disk read %.0f MB, written %.0f MB, busiest %.0f%%", u.ReadMB, u.WriteMB, 100*u.Busy)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
