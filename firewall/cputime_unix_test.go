//go:build unix

package firewall

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) the process has used so far, all
// threads together (GC workers included). On a shared machine it measures
// the work the fence does where wall time also measures the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
