package sqlstore_test

import (
	"context"
	"maps"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// BenchmarkListsAtScale times the list pages of issue 12 in the store
// itself, without HTTP or JSON, on a database made beforehand: the one
// scripts/bench-long.sh grows (BIG_DIR=… CASES=grow), named by
// CALLSIGN_BENCH_SQLITE, its first inbox holding every message. Each case
// reports its p99 beside ns/op, since the targets are p99s.
func BenchmarkListsAtScale(b *testing.B) {
	path := os.Getenv("CALLSIGN_BENCH_SQLITE")
	if path == "" {
		b.Skip("CALLSIGN_BENCH_SQLITE names no database (scripts/bench-long.sh grows one)")
	}
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, path, sqlstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	account, err := sqlstore.NewestMailAccount(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	newest, _, err := db.Messages(ctx, ports.MessageFilter{Scope: core.Scope{AccountID: account}, NewestFirst: true, Limit: 51})
	if err != nil || len(newest) < 51 {
		b.Fatalf("the newest messages: %d, %v", len(newest), err)
	}
	scope := core.Scope{AccountID: newest[0].AccountID}
	cursor, inbox := newest[50].CreatedAt, newest[0].InboxID
	bound := func(offset int) int { return core.CountBound(offset, core.DefaultPageLimit) }
	messages := map[string]ports.MessageFilter{
		"created_after":   {Scope: scope, CreatedAfter: &cursor, Limit: core.DefaultPageLimit, CountUpTo: bound(0)},
		"first_page":      {Scope: scope, Limit: core.DefaultPageLimit, CountUpTo: bound(0)},
		"inbox_page":      {Scope: scope, InboxID: inbox, Limit: core.DefaultPageLimit, CountUpTo: bound(0)},
		"offset_5000":     {Scope: scope, Limit: core.DefaultPageLimit, Offset: 5000, CountUpTo: bound(5000)},
		"newest_first":    {Scope: scope, NewestFirst: true, Limit: core.DefaultPageLimit, CountUpTo: bound(0)},
		"identity_scoped": {Scope: core.Scope{AccountID: scope.AccountID, IdentityID: newest[0].IdentityID}, Limit: core.DefaultPageLimit, CountUpTo: bound(0)},
	}
	for _, name := range slices.Sorted(maps.Keys(messages)) {
		f := messages[name]
		b.Run(name, func(b *testing.B) {
			timed(b, func() error {
				list, _, err := db.Messages(ctx, f)
				if err == nil && len(list) != core.DefaultPageLimit {
					b.Fatalf("%d messages, want a page of %d", len(list), core.DefaultPageLimit)
				}
				return err
			})
		})
	}
	threadPages := map[string]ports.Page{
		"threads_page":  {Limit: core.DefaultPageLimit, Count: true, CountUpTo: bound(0)},
		"threads_plain": {Limit: core.MaxUnpagedList + 1},
	}
	for _, name := range slices.Sorted(maps.Keys(threadPages)) {
		p := threadPages[name]
		b.Run(name, func(b *testing.B) {
			timed(b, func() error {
				_, _, err := db.Threads(ctx, ports.ThreadFilter{Scope: scope, Page: p})
				return err
			})
		})
	}
}

// timed runs call b.N times and reports the p99 of its durations.
func timed(b *testing.B, call func() error) {
	took := make([]time.Duration, 0, b.N)
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
}

// cpuTime is the CPU time this process has used, which unlike the wall
// time hardly depends on what else the machine runs.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
