package imap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// SupervisorOptions tune the source workers.
type SupervisorOptions struct {
	Log *slog.Logger
	// TLSConfig is the base of every source connection's TLS settings (its
	// roots, for tests); nil means the system's.
	TLSConfig *tls.Config
	// Reload is how often the list of sources is read again, to follow
	// changes made through other instances; 0 means 30 seconds. Changes made
	// through this process are followed at once.
	Reload time.Duration
	// RetryFirst and RetryMax space out reconnections: the pause doubles
	// from RetryFirst up to RetryMax while connections keep failing; 0 means
	// 2 seconds and 5 minutes.
	RetryFirst, RetryMax time.Duration
	// Recheck is how often a folder is looked at again: the poll interval
	// for a server without IDLE, and how long one IDLE lasts before it is
	// renewed (which also proves the connection alive); 0 means 2 minutes.
	Recheck time.Duration
	// ConnectTimeout bounds connecting, the TLS handshake and the server's
	// greeting; 0 means 30 seconds.
	ConnectTimeout time.Duration
}

// Supervisor keeps one worker, and so one connection, per mail source.
type Supervisor struct {
	sources *app.Sources
	opts    SupervisorOptions
}

// NewSupervisor builds the supervisor around the app's sources.
func NewSupervisor(sources *app.Sources, opts SupervisorOptions) *Supervisor {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&opts.Reload, 30 * time.Second}, {&opts.RetryFirst, 2 * time.Second}, {&opts.RetryMax, 5 * time.Minute}, {&opts.Recheck, 2 * time.Minute}, {&opts.ConnectTimeout, 30 * time.Second}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return &Supervisor{sources: sources, opts: opts}
}

// running is a worker and how to stop it.
type running struct {
	src  core.MailSource
	stop context.CancelFunc
	done chan struct{}
}

func (r *running) halt() {
	r.stop()
	<-r.done
}

// Run keeps the workers in step with the sources until ctx ends: it starts
// a worker for each new source, restarts one whose settings changed and
// stops one whose source is gone.
func (s *Supervisor) Run(ctx context.Context) {
	workers := map[string]*running{}
	defer func() {
		for _, w := range workers {
			w.halt()
		}
	}()
	reload := time.NewTicker(s.opts.Reload)
	defer reload.Stop()
	for {
		active, err := s.sources.Active(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.opts.Log.Error("mail sources: listing the sources failed", "err", err)
		case err == nil:
			s.reconcile(ctx, workers, active)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.sources.Changed():
		case <-reload.C:
		}
	}
}

func (s *Supervisor) reconcile(ctx context.Context, workers map[string]*running, active []core.MailSource) {
	current := map[string]bool{}
	for _, src := range active {
		current[src.ID] = true
		if w := workers[src.ID]; w != nil {
			if w.src.UpdatedAt.Equal(src.UpdatedAt) {
				continue
			}
			w.halt()
		}
		wctx, stop := context.WithCancel(ctx)
		w := &running{src: src, stop: stop, done: make(chan struct{})}
		workers[src.ID] = w
		go func() {
			defer close(w.done)
			(&worker{sources: s.sources, opts: s.opts, src: src, log: s.opts.Log.With("source", src.ID, "host", src.Host)}).run(wctx)
		}()
	}
	for id, w := range workers {
		if !current[id] {
			w.halt()
			delete(workers, id)
		}
	}
}

// worker pulls one source: connect, log in, open the folder read-only,
// deliver every message above the cursor, then wait (IDLE, or a pause
// where the server has none) and go again; after any failure, reconnect
// with a growing pause.
type worker struct {
	sources *app.Sources
	opts    SupervisorOptions
	src     core.MailSource
	log     *slog.Logger
}

// errOutdated ends a worker whose source changed or went away meanwhile.
var errOutdated = errors.New("the source's settings changed")

// fetchBatch is how many messages one FETCH of bodies asks for.
const fetchBatch = 16

func (w *worker) run(ctx context.Context) {
	progress := w.src.Progress
	pause := w.opts.RetryFirst
	for {
		synced, err := w.session(ctx, &progress)
		if ctx.Err() != nil || errors.Is(err, errOutdated) {
			return
		}
		// The user sees a category; the operator's log has the whole story.
		progress.Connected, progress.LastError = false, categoryOf(err)
		if w.record(ctx, progress) != nil {
			return
		}
		if synced {
			pause = w.opts.RetryFirst // it worked for a while: this is a new trouble
		}
		w.log.Warn("mail source: connection failed; retrying", "in", pause, "category", progress.LastError, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, w.opts.RetryMax)
	}
}

// failure is a session's error with the category last_error shows.
type failure struct {
	category string
	err      error
}

func (f *failure) Error() string { return f.category + ": " + f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// failed wraps err in the category of the step that failed, unless what
// went wrong says more: a timeout, a refused destination or a DNS failure.
func failed(step string, err error) error {
	var refused *core.DestinationError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, new(*failure)):
		return err
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		step = core.SourceErrorTimeout
	case errors.As(err, &refused):
		step = core.SourceErrorConnect
	case errors.As(err, &dnsErr):
		step = core.SourceErrorDNS
	}
	return &failure{category: step, err: err}
}

// categoryOf is the category of a session's error; anything not sorted by
// a step is the server's protocol.
func categoryOf(err error) string {
	var f *failure
	errors.As(failed(core.SourceErrorProtocol, err), &f)
	return f.category
}

// record saves progress; errOutdated means this worker should stop.
func (w *worker) record(ctx context.Context, p core.SourceProgress) error {
	ok, err := w.sources.Record(ctx, w.src, p)
	if err != nil {
		return failed(core.SourceErrorInternal, fmt.Errorf("recording progress: %w", err))
	}
	if !ok {
		return errOutdated
	}
	return nil
}

// session is one connection's life. It reports whether it completed a
// sync, and why it ended.
func (w *worker) session(ctx context.Context, p *core.SourceProgress) (bool, error) {
	wake := make(chan struct{}, 1)
	c, err := w.dial(ctx, wake)
	if err != nil {
		return false, err
	}
	defer c.Close()
	// Commands take no context: closing the connection is what ends them.
	defer context.AfterFunc(ctx, func() { c.Close() })()
	if err := c.Login(w.src.Username, w.src.Password).Wait(); err != nil {
		step := core.SourceErrorProtocol
		if errors.As(err, new(*imap.Error)) {
			step = core.SourceErrorAuth // a tagged NO or BAD to LOGIN
		}
		return false, failed(step, fmt.Errorf("logging in as %s: %w", w.src.Username, err))
	}
	// EXAMINE: pulling never changes the source folder, not even \Seen.
	sel, err := c.Select(w.src.Folder, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		return false, failed(core.SourceErrorProtocol, fmt.Errorf("opening folder %q: %w", w.src.Folder, err))
	}
	if sel.UIDValidity != p.UIDValidity {
		if p.UIDValidity != 0 {
			w.log.Info("mail source: UIDVALIDITY changed; reading the folder again (delivered mail is recognised by Message-ID)",
				"was", p.UIDValidity, "now", sel.UIDValidity)
		}
		p.UIDValidity, p.LastUID = sel.UIDValidity, 0
	}
	p.Connected, p.LastError = true, ""
	if err := w.record(ctx, *p); err != nil {
		return false, err
	}
	for synced := false; ; synced = true {
		if err := w.sync(ctx, c, p); err != nil {
			return synced, err
		}
		now := time.Now().UTC()
		p.LastSyncAt = &now
		if err := w.record(ctx, *p); err != nil {
			return true, err
		}
		if err := w.wait(ctx, c, wake); err != nil {
			return true, err
		}
	}
}

// dial connects as the source's tls setting says, through the app's
// outbound-destination policy (the host is checked again here: its
// addresses may have changed since it was saved); wake is signalled when the
// server announces new messages.
func (w *worker) dial(ctx context.Context, wake chan struct{}) (*imapclient.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, w.opts.ConnectTimeout)
	defer cancel()
	conn, err := w.sources.Dial(dctx, w.src)
	if err != nil {
		return nil, failed(core.SourceErrorConnect, err)
	}
	// STARTTLS and the greeting take no context (and the client sets its own
	// read deadlines): closing the connection holds them to ours.
	expired := context.AfterFunc(dctx, func() { conn.Close() })
	// step names a failure, as a timeout if ours is what ended it.
	step := func(category string, err error) error {
		conn.Close()
		if dctx.Err() != nil {
			err = fmt.Errorf("%w: %w", dctx.Err(), err)
		}
		return failed(category, err)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if w.opts.TLSConfig != nil {
		tlsConfig = w.opts.TLSConfig.Clone()
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = w.src.Host
	}
	opts := &imapclient.Options{
		TLSConfig: tlsConfig,
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			// This runs on the client's reader goroutine: signal, never call the client.
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			},
		},
	}
	var c *imapclient.Client
	switch w.src.TLS {
	case core.SourceImplicitTLS:
		tlsConfig.NextProtos = []string{"imap"}
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(dctx); err != nil {
			return nil, step(core.SourceErrorTLS, err)
		}
		c = imapclient.New(tc, opts)
	case core.SourceStartTLS:
		if c, err = imapclient.NewStartTLS(conn, opts); err != nil {
			return nil, step(core.SourceErrorTLS, err)
		}
	default:
		c = imapclient.New(conn, opts)
	}
	if err := c.WaitGreeting(); err != nil {
		return nil, step(core.SourceErrorProtocol, fmt.Errorf("reading the greeting: %w", err))
	}
	if !expired() {
		return nil, step(core.SourceErrorTimeout, context.DeadlineExceeded)
	}
	return c, nil
}

// sync delivers every message above the cursor in UID order, moving the
// cursor after each one, so a crash repeats at most one delivery (which
// Message-ID deduplication then skips).
func (w *worker) sync(ctx context.Context, c *imapclient.Client, p *core.SourceProgress) error {
	var above imap.UIDSet
	above.AddRange(imap.UID(p.LastUID+1), 0)
	listed, err := c.Fetch(above, &imap.FetchOptions{UID: true}).Collect()
	if err != nil {
		return fmt.Errorf("listing new messages: %w", err)
	}
	var uids []imap.UID
	for _, m := range listed {
		// "n:*" names the last message even when it is below n.
		if uint32(m.UID) > p.LastUID {
			uids = append(uids, m.UID)
		}
	}
	slices.Sort(uids)
	body := &imap.FetchItemBodySection{Peek: true}
	for batch := range slices.Chunk(uids, fetchBatch) {
		msgs, err := c.Fetch(imap.UIDSetNum(batch...), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{body}}).Collect()
		if err != nil {
			return fmt.Errorf("fetching messages: %w", err)
		}
		slices.SortFunc(msgs, func(a, b *imapclient.FetchMessageBuffer) int { return int(a.UID) - int(b.UID) })
		for _, m := range msgs {
			if err := w.deliver(ctx, m.UID, m.FindBodySection(body)); err != nil {
				return err
			}
			p.LastUID = uint32(m.UID)
			if err := w.record(ctx, *p); err != nil {
				return err
			}
		}
	}
	return nil
}

// deliver hands one message to the inbound path. A message that can never
// be stored (not a message at all, or over the size limit) is skipped with
// a warning rather than retried forever.
func (w *worker) deliver(ctx context.Context, uid imap.UID, raw []byte) error {
	err := w.sources.Deliver(ctx, w.src, raw)
	switch core.KindOf(err) {
	case core.KindInvalid, core.KindTooLarge:
		w.log.Warn("mail source: skipping a message that cannot be stored", "uid", uid, "err", err)
		return nil
	}
	if err != nil {
		return failed(core.SourceErrorInternal, fmt.Errorf("storing message UID %d: %w", uid, err))
	}
	return nil
}

// wait returns when the folder may have new mail: the server announced it
// during IDLE, or Recheck passed (polling servers without IDLE).
func (w *worker) wait(ctx context.Context, c *imapclient.Client, wake chan struct{}) error {
	if !c.Caps().Has(imap.CapIdle) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.Closed():
			return errors.New("the server closed the connection")
		case <-time.After(w.opts.Recheck):
		}
		return c.Noop().Wait()
	}
	idle, err := c.Idle()
	if err != nil {
		return fmt.Errorf("starting IDLE: %w", err)
	}
	select {
	case <-ctx.Done():
	case <-c.Closed():
	case <-wake:
	case <-time.After(w.opts.Recheck):
	}
	if err := idle.Close(); err != nil {
		return fmt.Errorf("ending IDLE: %w", err)
	}
	if err := idle.Wait(); err != nil {
		return fmt.Errorf("during IDLE: %w", err)
	}
	return ctx.Err()
}
