//go:build linux

package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReleaseStartupPages: the binary's pages leave the resident set, and
// the process runs on, faulting back the ones it uses.
func TestReleaseStartupPages(t *testing.T) {
	before := residentFileKiB(t)
	if err := releaseStartupPages(); err != nil {
		t.Fatal(err)
	}
	after := residentFileKiB(t)
	t.Logf("file-backed resident set %d KiB, then %d KiB", before, after)
	if after >= before {
		t.Errorf("the file-backed resident set went from %d KiB to %d KiB", before, after)
	}
}

// residentFileKiB is the process's file-backed resident set (RssFile).
func residentFileKiB(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
