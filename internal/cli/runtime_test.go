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

	for sqlite, want := range map[bool]int64{true: sqliteMemoryLimit, false: postgresMemoryLimit} {
		tuneRuntime(func(string) string { return "" }, sqlite)
		if got := debug.SetGCPercent(100); got != 400 {
			t.Errorf("GOGC %d, want 400", got)
		}
		if got := debug.SetMemoryLimit(math.MaxInt64); got != want {
			t.Errorf("SQLite %v: memory limit %d, want %d", sqlite, got, want)
		}
	}

	set := map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}
	tuneRuntime(func(k string) string { return set[k] }, true)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set in the environment became %d", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set in the environment became %d", got)
	}
}
