package sqlstore

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// WAL checkpointing: the writer never checkpoints (wal_autocheckpoint=0), so
// no commit pays for copying pages back into the database; a background
// goroutine does, in two ways.
const (
	// checkpointEvery is how often a PASSIVE checkpoint copies the log back
	// into the database. It never waits for the writer nor for readers, so
	// under load it keeps the part of the log still to copy small.
	checkpointEvery = 250 * time.Millisecond
	// walRestartAt is the log size past which the log is restarted. A
	// PASSIVE checkpoint alone never lets the log start over while writes
	// keep coming (the writer appends while it copies), so the file would
	// grow for as long as load lasts.
	walRestartAt = 16 << 20
	// restartReaderWait bounds how long a restart waits for readers still
	// on the old log; one that gives up tries again on a later tick. The
	// writer waits with it, so under load a restart waits only
	// restartBriefWait until the log is past restartWaitsPast times
	// walRestartAt: readers that begin once the log is all copied do not
	// hold it, and those that began before leave within a page's read.
	restartReaderWait = 10 * time.Millisecond
	restartBriefWait  = 2 * time.Millisecond
	restartWaitsPast  = 3
	// restartPoll is how often a restart looks again for readers. SQLite's
	// own busy handler sleeps 1, 2, 5 ms and so on between looks, which
	// outlasts the readers it waits for.
	restartPoll = 250 * time.Microsecond
)

// checkpointer copies SQLite's WAL back into the database now and then.
//
// Every tick it runs a PASSIVE checkpoint on a connection of its own. When
// the log file has grown past walRestartAt it then restarts the log with a
// RESTART checkpoint run on the writing connection itself: taken from the
// writer's pool, it waits its turn like any write instead of polling for
// SQLite's lock (whose back-off sleeps would stall the writer for tens of
// milliseconds), and since a PASSIVE checkpoint has just copied almost
// everything, it holds the writer only for the last frames and an fsync of
// the database. The file is kept (overwriting it costs commits less than
// growing it anew). When writes have paused with a log left behind, a
// TRUNCATE checkpoint empties the file.
type checkpointer struct {
	stop      context.CancelFunc
	done      sync.WaitGroup
	restarted func(held time.Duration)
}

// checkpointPolicy is when the checkpointer works.
type checkpointPolicy struct {
	every     time.Duration // PASSIVE checkpoints
	restartAt int64         // log size that calls for a restart
	// restarted, when set, hears how long each restart held the writer.
	restarted func(held time.Duration)
}

// startCheckpoints checkpoints the database at path (base is its SQLite URI
// with the pragmas, w the writer's pool) as p says until close.
func startCheckpoints(path, base string, w *sqlx.DB, p checkpointPolicy) (*checkpointer, error) {
	conn, err := sqlx.Open("sqlite", base)
	if err != nil {
		return nil, err
	}
	conn.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{stop: cancel, restarted: p.restarted}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		defer conn.Close()
		tick := time.NewTicker(p.every)
		defer tick.Stop()
		lastFrames := -1
		for {
			select {
			case <-ctx.Done():
				_, _ = conn.Exec("PRAGMA wal_checkpoint(PASSIVE)")
				return
			case <-tick.C:
			}
			var r struct{ Busy, Log, Checkpointed int }
			if err := conn.QueryRowxContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&r.Busy, &r.Log, &r.Checkpointed); err != nil {
				continue
			}
			paused := r.Log > 0 && r.Log == lastFrames
			lastFrames = r.Log
			size := walSize(path)
			switch {
			case paused:
				// Idle: give the disk back.
				c.restart(ctx, w, "TRUNCATE", restartReaderWait)
			case size > p.restartAt:
				// Copy what came in during the last pass, so that the
				// restart holds the writer for as little as is left.
				_, _ = conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
				readerWait := restartBriefWait
				if size > restartWaitsPast*p.restartAt {
					readerWait = restartReaderWait
				}
				c.restart(ctx, w, "RESTART", readerWait)
			}
		}
	}()
	return c, nil
}

// restart checkpoints the whole log on the writing connection so that the
// next write starts the log over (mode RESTART; the writer's
// journal_size_limit then cuts the file back to walRestartAt) or empties
// the file (TRUNCATE), waiting at most readerWait for readers on the old
// log.
func (c *checkpointer) restart(ctx context.Context, w *sqlx.DB, mode string, readerWait time.Duration) {
	conn, err := w.Connx(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	start := time.Now()
	// Polled here rather than by SQLite's busy handler.
	_, _ = conn.ExecContext(ctx, "PRAGMA busy_timeout = 0")
	for {
		var busy, frames, copied int
		err := conn.QueryRowxContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &frames, &copied)
		if err != nil || busy == 0 || time.Since(start) >= readerWait {
			break
		}
		time.Sleep(restartPoll)
	}
	_, _ = conn.ExecContext(ctx, "PRAGMA busy_timeout = "+busyTimeoutMS)
	if c.restarted != nil {
		c.restarted(time.Since(start))
	}
}

// walSize is the size of the log file beside the database at path.
func walSize(path string) int64 {
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}

// close checkpoints once more and stops.
func (c *checkpointer) close() {
	c.stop()
	c.done.Wait()
}
