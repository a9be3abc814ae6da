package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/internal/server"
)

// tuneRuntime sets the collector for serving, where the environment's
// GOGC and GOMEMLIMIT do not.
func tuneRuntime(getenv func(string) string) {
	if getenv("GOGC") == "" {
		// Each message makes short-lived garbage a few times its size while
		// the live heap stays small: collecting less often saves CPU on the
		// ingest path for a little memory.
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		// A soft limit keeps that from growing the heap past what serving
		// needs: the collector runs more often near it instead of letting
		// GOGC's headroom (five times the live heap) decide.
		debug.SetMemoryLimit(softMemoryLimit)
	}
}

// softMemoryLimit is the Go runtime's soft memory limit for serve unless
// GOMEMLIMIT sets one. The process's peak is that, the binary's pages that
// serving reads (releaseStartupPages gives back the rest), and, on SQLite,
// SQLite's own memory (1-4 MiB), which lives beside Go's. At 28 MiB the
// bench's peak is 58-59 MiB on SQLite; 24 took 5% more CPU a message
// (docs/perf/2026-12-06-speed.md, session 9).
const softMemoryLimit = 28 << 20

func (c *cli) serve(*cobra.Command, []string) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	log := c.logger(cfg.LogLevel)
	tuneRuntime(c.getenv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := server.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.Version = Version
	stopWatching := c.watchInterrupts(svc, cancel)
	defer stopWatching()
	if err := svc.Listen(); err != nil {
		return err
	}
	svc.Announce()
	// What start-up made (migrations, templates, the API's documents) is
	// garbage now; collected here, it does not set the first heap goal.
	debug.FreeOSMemory()
	if err := releaseStartupPages(); err != nil {
		svc.Log().Warn("the binary's start-up pages stay resident", "err", err)
	}
	c.nextSteps(ctx, svc)
	return svc.Serve(ctx)
}

// watchInterrupts starts the drain at the first Ctrl-C (or SIGTERM) and
// exits at once at the second, naming what it did not wait for.
func (c *cli) watchInterrupts(svc *server.Service, stop func()) (stopWatching func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			svc.Log().Info("stopping on " + sig.String() + "; press Ctrl-C again to exit at once")
			stop()
		case <-done:
			return
		}
		select {
		case sig := <-signals:
			fmt.Fprintf(c.stderr, "callsign: second %s: exiting at once without waiting for %s\n", sig, svc.StillRunning())
			os.Exit(128 + int(sig.(syscall.Signal)))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(signals)
		close(done)
	}
}

// nextSteps tells a new operator what to do after the first start: back up
// the keys just generated, and create the first account.
func (c *cli) nextSteps(ctx context.Context, svc *server.Service) {
	svc.NoteGeneratedKeys(c.stdout)
	has, err := svc.DB().HasAccounts(ctx)
	if err != nil {
		svc.Log().Warn("could not check for accounts", "err", err)
		return
	}
	if !has {
		fmt.Fprintf(c.stdout, "No account exists yet. Create one (in another terminal, with the same CALLSIGN_* settings); it prints a management key, shown once:\n  %s account create --email you@example.com\n", InvokedAs)
	}
}

func (c *cli) migrate(*cobra.Command, []string) error {
	return c.withService(func(ctx context.Context, svc *server.Service) error {
		v, err := svc.DB().SchemaVersion(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "database is at schema version %d\n", v)
		return nil
	})
}
