package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat times: USER_HZ, 100 on every
// Linux platform Go runs on.
const clockTick = 10 * time.Millisecond

// procStat is what serverCPU reads of one process.
type procStat struct {
	ppid int
	cpu  time.Duration
}

// serverCPU returns the CPU used so far by each process that listens on
// one of ports, and by their descendants, by pid. It is empty where /proc
// cannot be read.
func serverCPU(ports []int) map[int]time.Duration {
	out := map[int]time.Duration{}
	if len(ports) == 0 {
		return out
	}
	inodes := listeningInodes(ports)
	stats := map[int]procStat{}
	roots := map[int]bool{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		st, ok := readStat(dir)
		if !ok {
			continue
		}
		stats[pid] = st
		if len(inodes) > 0 && ownsSocket(dir, inodes) {
			roots[pid] = true
		}
	}
	for pid, st := range stats {
		// A process counts when it or an ancestor listens.
		for p, seen := pid, 0; p > 1 && seen < 64; p, seen = stats[p].ppid, seen+1 {
			if roots[p] {
				out[pid] = st.cpu
				break
			}
		}
	}
	return out
}

// readStat reads utime, stime and the parent of the process at dir.
func readStat(dir string) (procStat, bool) {
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procStat{}, false
	}
	// The name, field 2, is in parentheses and may hold spaces: fields
	// after the last ')' start at field 3 (state).
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])               // field 4
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return procStat{ppid: ppid, cpu: time.Duration(utime+stime) * clockTick}, true
}

// listeningInodes returns the socket inodes of TCP listeners on ports.
func listeningInodes(ports []int) map[string]bool {
	want := map[string]bool{}
	for _, p := range ports {
		want[fmt.Sprintf("%04X", p)] = true
	}
	inodes := map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			if _, port, ok := strings.Cut(f[1], ":"); ok && want[port] {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	return inodes
}

// ownsSocket reports whether the process at dir has one of inodes open.
func ownsSocket(dir string, inodes map[string]bool) bool {
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && inodes[link] {
			return true
		}
	}
	return false
}
