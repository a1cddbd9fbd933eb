package sidebyside

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
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
	f, err := os.Open(filepath.Join("/proc", pid, "status"))
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
	s := &sampler{stop: make(chan struct{}), peak: map[int]int64{}, comm: map[int]string{}, srvStart: serverTicks()}
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
		s.mu.Lock()
		if kb<<10 > s.peak[p.pid] {
			s.peak[p.pid] = kb << 10
			s.comm[p.pid] = p.comm
		}
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
