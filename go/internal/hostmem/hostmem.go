// Package hostmem says how much memory this host, or the cgroup this
// process runs in, has available: what a prepare may take without pushing
// the host into swap or the cgroup into its OOM killer.
package hostmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Available is the smaller of /proc/meminfo's MemAvailable and the room
// left under the memory limit of this process's cgroup and each of its
// ancestors (v2 memory.max less memory.current; v1 memory.limit_in_bytes
// less memory.usage_in_bytes), with what bounded it.
func Available() (int64, string, error) {
	return available("/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup")
}

func available(meminfo, selfCgroup, cgroupRoot string) (int64, string, error) {
	avail, err := memAvailable(meminfo)
	if err != nil {
		return 0, "", err
	}
	by := "MemAvailable in " + meminfo
	for _, dir := range cgroupDirs(selfCgroup, cgroupRoot) {
		for _, files := range [][2]string{{"memory.max", "memory.current"}, {"memory.limit_in_bytes", "memory.usage_in_bytes"}} {
			limit, lerr := readNumber(filepath.Join(dir, files[0]))
			used, uerr := readNumber(filepath.Join(dir, files[1]))
			if lerr != nil || uerr != nil || limit <= 0 {
				continue // no such file, or no limit ("max")
			}
			if room := max(limit-used, 0); room < avail {
				avail, by = room, fmt.Sprintf("%s less %s in %s", files[0], files[1], dir)
			}
		}
	}
	return avail, by, nil
}

// memAvailable reads MemAvailable (kB) from a meminfo file.
func memAvailable(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: MemAvailable: %w", path, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New(path + " has no MemAvailable")
}

// cgroupDirs are the directories of this process's memory cgroup and its
// ancestors below root, innermost first (v2's unified line "0::/path", or
// v1's memory controller line "N:memory:/path").
func cgroupDirs(selfCgroup, root string) []string {
	b, err := os.ReadFile(selfCgroup)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		base := root
		switch {
		case parts[0] == "0" && parts[1] == "":
		case strings.Contains(","+parts[1]+",", ",memory,"):
			base = filepath.Join(root, "memory")
		default:
			continue
		}
		for p := filepath.Clean("/" + parts[2]); ; p = filepath.Dir(p) {
			dirs = append(dirs, filepath.Join(base, p))
			if p == "/" {
				break
			}
		}
	}
	return dirs
}

// readNumber reads a cgroup file holding one number ("max": -1).
func readNumber(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
