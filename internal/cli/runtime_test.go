package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestServeTunesTheCollectorUnlessTheEnvironmentDoes(t *testing.T) {
	t.Parallel()
	gogc, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(gogc); debug.SetMemoryLimit(limit) })

	tuneRuntime(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("GOGC %d, want 400", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != softMemoryLimit {
		t.Errorf("memory limit %d, want %d", got, softMemoryLimit)
	}

	set := map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}
	tuneRuntime(func(k string) string { return set[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set in the environment became %d", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set in the environment became %d", got)
	}
}
