package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/config"
)

// databaseConnectTimeout bounds the first connection to the database, so an
// unreachable server fails start-up instead of hanging it.
const databaseConnectTimeout = 15 * time.Second

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
// GOMEMLIMIT sets one. The live heap under load is a few MiB; the rest of
// the process is SQLite's memory, outside Go's heap and its limit (8 MiB,
// growing to 14 over a long run), and the binary's pages (30 MiB). At 32
// MiB the peak under ingest was 64-65 MiB, past issue 12's 64; at 28 it is
// 60-61 MiB, for CPU per message within the noise, and 68-72 MiB over
// 60,000-200,000 messages; 20 would hold that to 60 for about 20% more CPU
// (docs/perf/2026-12-issue-12-targets-new-machine.md; design.md, "Storage").
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
	svc, err := openService(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.close()
	stopWatching := c.watchInterrupts(svc, cancel)
	defer stopWatching()
	if err := svc.listen(); err != nil {
		return err
	}
	svc.announce()
	// What start-up made (migrations, templates, the API's documents) is
	// garbage now; collected here, it does not set the first heap goal.
	debug.FreeOSMemory()
	c.nextSteps(ctx, svc)
	return svc.serve(ctx)
}

// watchInterrupts starts the drain at the first Ctrl-C (or SIGTERM) and
// exits at once at the second, naming what it did not wait for.
func (c *cli) watchInterrupts(svc *service, stop func()) (stopWatching func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			svc.log.Info("stopping on " + sig.String() + "; press Ctrl-C again to exit at once")
			stop()
		case <-done:
			return
		}
		select {
		case sig := <-signals:
			fmt.Fprintf(c.stderr, "callsign: second %s: exiting at once without waiting for %s\n", sig, svc.drain.describe())
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
func (c *cli) nextSteps(ctx context.Context, svc *service) {
	svc.noteGeneratedKeys(c.stdout)
	has, err := svc.db.HasAccounts(ctx)
	if err != nil {
		svc.log.Warn("could not check for accounts", "err", err)
		return
	}
	if !has {
		fmt.Fprintf(c.stdout, "No account exists yet. Create one (in another terminal, with the same CALLSIGN_* settings); it prints a management key, shown once:\n  %s account create --email you@example.com\n", invokedAs)
	}
}

// noteGeneratedKeys says which key files this start created, once, so the
// operator backs them up.
func (s *service) noteGeneratedKeys(w io.Writer) {
	for _, path := range s.generatedKeys {
		why := "without it the vault's passwords and secrets cannot be read"
		if filepath.Base(path) == "jwt.key" {
			why = "it signs sign-in tokens and sessions, which all end if it is lost"
		}
		fmt.Fprintf(w, "Generated %s: back it up; %s.\n", path, why)
	}
}

// missingKeyFiles are the key files that opening the service will generate.
func missingKeyFiles(cfg config.Config) []string {
	var paths []string
	if cfg.VaultKey == nil {
		paths = append(paths, vaultKeyFile(cfg))
	}
	if cfg.JWTSecret == nil {
		paths = append(paths, jwtKeyFile(cfg))
	}
	var missing []string
	for _, p := range paths {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			missing = append(missing, p)
		}
	}
	return missing
}

// checkDataDir makes sure the data directory can be written when anything
// lives there (the SQLite file, generated keys), so start-up fails with one
// line naming CALLSIGN_DATA_DIR instead of a later, stranger error.
func checkDataDir(cfg config.Config) error {
	if !storesInDataDir(cfg) {
		return nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("CALLSIGN_DATA_DIR: cannot create %s: %w", cfg.DataDir, err)
	}
	probe, err := os.CreateTemp(cfg.DataDir, ".write-check-*")
	if err != nil {
		return fmt.Errorf("CALLSIGN_DATA_DIR: %s is not writable: %w", cfg.DataDir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// storesInDataDir reports whether anything lives in the data directory:
// the SQLite file, or a key that is not configured.
func storesInDataDir(cfg config.Config) bool {
	sqliteInDir := !sqlstore.IsPostgresURL(cfg.DatabaseURL) && filepath.Dir(filepath.Clean(cfg.DatabaseURL)) == filepath.Clean(cfg.DataDir)
	return sqliteInDir || cfg.VaultKey == nil || cfg.JWTSecret == nil
}

// describeDatabase names a database for messages without its password.
func describeDatabase(databaseURL string) string {
	if !sqlstore.IsPostgresURL(databaseURL) {
		return "the SQLite database " + databaseURL
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "the PostgreSQL database"
	}
	return "the PostgreSQL database at " + u.Host + u.Path
}

// drain tracks what shutdown waits for: named parts, each done when its
// goroutine returns, some counting their open connections.
type drain struct {
	mu    sync.Mutex
	parts []*drainPart
}

type drainPart struct {
	name string
	noun string        // what open counts: "connection", "session"
	open *atomic.Int64 // nil when not counted
	done atomic.Bool
}

func (p *drainPart) openCount() int64 {
	if p.open == nil {
		return 0
	}
	return p.open.Load()
}

func (d *drain) part(name string) *drainPart {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.parts {
		if p.name == name {
			return p
		}
	}
	p := &drainPart{name: name}
	d.parts = append(d.parts, p)
	return p
}

// task runs f in g as the part called name.
func (d *drain) task(name string, g *errgroup.Group, f func() error) {
	p := d.part(name)
	g.Go(func() error {
		defer p.done.Store(true)
		return f()
	})
}

// count wraps ln so that the part called name knows its open connections;
// accepted, when set, hears each new one.
func (d *drain) count(name, noun string, ln net.Listener, accepted func()) net.Listener {
	p := d.part(name)
	p.noun, p.open = noun, &atomic.Int64{}
	return &countingListener{Listener: ln, open: p.open, accepted: accepted}
}

// describe lists the parts still running, such as
// "SMTP (1 open session), outbox"; "nothing" when none is.
func (d *drain) describe() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var running []string
	for _, p := range d.parts {
		if p.done.Load() {
			continue
		}
		if n := p.openCount(); n > 0 {
			noun := p.noun
			if n > 1 {
				noun += "s"
			}
			running = append(running, fmt.Sprintf("%s (%d open %s)", p.name, n, noun))
			continue
		}
		running = append(running, p.name)
	}
	if len(running) == 0 {
		return "nothing"
	}
	return strings.Join(running, ", ")
}

// countingListener counts the connections it accepted that are still open.
type countingListener struct {
	net.Listener
	open     *atomic.Int64
	accepted func() // nil for none
}

func (l *countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.accepted != nil {
		l.accepted()
	}
	l.open.Add(1)
	return &countedConn{Conn: conn, open: l.open}, nil
}

type countedConn struct {
	net.Conn
	once sync.Once
	open *atomic.Int64
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

func (c *cli) migrate(*cobra.Command, []string) error {
	return c.withService(func(ctx context.Context, svc *service) error {
		v, err := svc.db.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "database is at schema version %d\n", v)
		return nil
	})
}
