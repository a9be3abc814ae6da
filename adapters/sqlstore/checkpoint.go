package sqlstore

import (
	"context"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// checkpointEvery is how often the WAL is copied back into the database.
const checkpointEvery = time.Second

// checkpointer copies SQLite's WAL back into the database file now and
// then, on a connection of its own, so that no commit pays for it: the
// writer runs with wal_autocheckpoint=0. It checkpoints in PASSIVE mode,
// which never waits for readers nor blocks the writer, and the WAL file is
// truncated back to a small size whenever it has been checkpointed whole.
type checkpointer struct {
	stop context.CancelFunc
	done sync.WaitGroup
}

// startCheckpoints opens a connection to the database at base (a SQLite
// URI with its pragmas) and checkpoints every interval until close.
func startCheckpoints(base string, every time.Duration) (*checkpointer, error) {
	conn, err := sqlx.Open("sqlite", base+"&_pragma=journal_size_limit(67108864)")
	if err != nil {
		return nil, err
	}
	conn.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{stop: cancel}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		defer conn.Close()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				_, _ = conn.Exec("PRAGMA wal_checkpoint(PASSIVE)")
				return
			case <-tick.C:
				_, _ = conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
			}
		}
	}()
	return c, nil
}

// close checkpoints once more and stops.
func (c *checkpointer) close() {
	c.stop()
	c.done.Wait()
}
