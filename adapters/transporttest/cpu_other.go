//go:build !unix

package transporttest

import "time"

// cpuTime is unknown here: the CPU figure reads 0.
func cpuTime() time.Duration { return 0 }
