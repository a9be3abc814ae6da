package imap

import (
	"bytes"
	"context"
	"crypto/rand"
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
	// Lease is how long this instance holds the sources it pulls: it claims
	// sources and renews its leases every third of it (which also follows
	// changes made through other instances; changes made through this
	// process are followed at once), and another instance takes over the
	// sources of one that stopped renewing once its leases have run out.
	// 0 means 30 seconds.
	Lease time.Duration
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

// Supervisor keeps one worker, and so one connection, per mail source that
// this instance holds the lease of: each source is pulled by one instance
// of the cluster at a time.
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
	}{{&opts.Lease, 30 * time.Second}, {&opts.RetryFirst, 2 * time.Second}, {&opts.RetryMax, 5 * time.Minute}, {&opts.Recheck, 2 * time.Minute}, {&opts.ConnectTimeout, 30 * time.Second}} {
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

// Run keeps the workers in step with the sources this instance holds until
// ctx ends: it claims sources and renews its leases every third of a
// lease, starts a worker for each source it holds, restarts one whose
// settings changed, and stops one whose source is gone or held by another
// instance. When the leases cannot be renewed before they run out, every
// worker stops (another instance may take the sources over). At the end
// it releases its leases, so other instances take over at their next claim.
func (s *Supervisor) Run(ctx context.Context) {
	owner := rand.Text() // this run's name in the leases
	workers := map[string]*running{}
	defer func() {
		for _, w := range workers {
			w.halt()
		}
		// ctx has ended; the release gets a moment of its own.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.sources.Release(rctx, owner); err != nil {
			s.opts.Log.Error("mail sources: releasing the leases failed; other instances take the sources over when they run out", "err", err)
		}
	}()
	every := s.opts.Lease / 3
	renew := time.NewTicker(every)
	defer renew.Stop()
	var heldUntil time.Time
	for {
		claimed := time.Now()
		held, err := s.sources.Claim(ctx, owner, s.opts.Lease)
		switch {
		case err != nil && ctx.Err() == nil:
			s.opts.Log.Error("mail sources: claiming the sources failed", "err", err)
			if !claimed.Add(every).Before(heldUntil) {
				s.reconcile(ctx, workers, nil) // the leases end before the next try
			}
		case err == nil:
			heldUntil = claimed.Add(s.opts.Lease)
			s.reconcile(ctx, workers, held)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.sources.Changed():
		case <-renew.C:
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
	c, m, err := w.dial(ctx, wake)
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
	f := &folder{Client: c, meter: m, uidNext: sel.UIDNext}
	for synced := false; ; synced = true {
		if err := w.sync(ctx, f, p); err != nil {
			return synced, f.blame(err)
		}
		now := time.Now().UTC()
		p.LastSyncAt = &now
		if err := w.record(ctx, *p); err != nil {
			return true, err
		}
		m.credit(idleBytes)
		if err := w.wait(ctx, c, wake); err != nil {
			return true, f.blame(err)
		}
	}
}

// folder is the open source folder of a session.
type folder struct {
	*imapclient.Client
	meter *meter
	// uidNext is the folder's UIDNEXT when it was opened: UIDs below it are
	// listed in windows, and above it with one open-ended FETCH.
	uidNext imap.UID
}

// blame says so when the server's answers ran over what was allowed: the
// client only sees its connection fail.
func (f *folder) blame(err error) error {
	if f.meter.over() {
		return failed(core.SourceErrorProtocol, fmt.Errorf("%w: %w", errOverBudget, err))
	}
	return err
}

// dial connects as the source's tls setting says, through the app's
// outbound-destination policy (the host is checked again here: its
// addresses may have changed since it was saved); wake is signalled when the
// server announces new messages.
func (w *worker) dial(ctx context.Context, wake chan struct{}) (*imapclient.Client, *meter, error) {
	dctx, cancel := context.WithTimeout(ctx, w.opts.ConnectTimeout)
	defer cancel()
	raw, err := w.sources.Dial(dctx, w.src)
	if err != nil {
		return nil, nil, failed(core.SourceErrorConnect, err)
	}
	// The handshake, greeting, LOGIN and EXAMINE together get sessionBytes.
	conn := newMeter(raw, sessionBytes)
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
			return nil, nil, step(core.SourceErrorTLS, err)
		}
		c = imapclient.New(tc, opts)
	case core.SourceStartTLS:
		if c, err = imapclient.NewStartTLS(conn, opts); err != nil {
			return nil, nil, step(core.SourceErrorTLS, err)
		}
	default:
		c = imapclient.New(conn, opts)
	}
	if err := c.WaitGreeting(); err != nil {
		return nil, nil, step(core.SourceErrorProtocol, fmt.Errorf("reading the greeting: %w", err))
	}
	if !expired() {
		return nil, nil, step(core.SourceErrorTimeout, context.DeadlineExceeded)
	}
	return c, conn, nil
}

// How much of a source's mail one worker holds at once: a server decides
// what it sends, so every amount it controls is bounded here.
const (
	// batchBytes and fetchBatch: messages are fetched several at a time
	// while their declared sizes add up to no more than batchBytes, and a
	// larger one alone.
	batchBytes = 4 << 20
	fetchBatch = 16
	// sizeSlack is how far a body may exceed the RFC822.SIZE the server
	// declared for it (servers count line ends differently).
	sizeSlack = 64 << 10
	// maxListed is how many new messages one pass lists (the lowest UIDs);
	// the next pass lists the rest.
	maxListed = 10000
	// The byte budget (meter): sessionBytes for the handshake, LOGIN and
	// EXAMINE; listBytes plus perListed for each message a listing may
	// show; responseBytes on top of the declared sizes for a FETCH of
	// bodies; idleBytes for what a wait may bring (EXISTS, EXPUNGE).
	sessionBytes  = 1 << 20
	listBytes     = 64 << 10
	perListed     = 128
	responseBytes = 16 << 10
	idleBytes     = 256 << 10
	// listWindow is the span of UIDs one listing FETCH covers; it doubles
	// (up to maxListWindow) across empty stretches of a sparse folder.
	listWindow    = 2000
	maxListWindow = 1 << 16
)

// listedMessage is a new message as the listing shows it.
type listedMessage struct {
	uid  imap.UID
	size int64
}

// sync delivers every message above the cursor in UID order, moving the
// cursor after each one, so a crash repeats at most one delivery (which
// Message-ID deduplication then skips). Sizes are listed first: a message
// over the size limit is skipped (and logged) without being fetched, and a
// body larger than its declared size ends the session after the cursor
// has moved past it.
func (w *worker) sync(ctx context.Context, c *folder, p *core.SourceProgress) error {
	listed, err := w.list(c, p.LastUID)
	if err != nil {
		return err
	}
	limit := w.sources.MaxMessageBytes()
	for len(listed) > 0 {
		// The next batch: what fits in batchBytes, or one large message.
		var batch []listedMessage
		var total int64
		for len(listed) > 0 && len(batch) < fetchBatch {
			m := listed[0]
			if m.size > limit {
				if len(batch) > 0 {
					break // deliver what precedes it first, to keep UID order
				}
				w.log.Warn("mail source: skipping a message over the size limit", "uid", m.uid, "size", m.size, "limit", limit)
				listed = listed[1:]
				if err := w.advance(ctx, p, m.uid); err != nil {
					return err
				}
				continue
			}
			if len(batch) > 0 && total+m.size > batchBytes {
				break
			}
			batch, total, listed = append(batch, m), total+m.size, listed[1:]
		}
		if len(batch) == 0 {
			continue
		}
		bodies, tooBig, err := w.fetch(c, batch)
		reached := true // every message before tooBig was dealt with
		for _, m := range batch {
			raw, ok := bodies[m.uid]
			if tooBig != 0 && m.uid >= tooBig {
				break
			}
			// A message the server did not send was expunged, unless the
			// FETCH broke off: then the cursor stops before it.
			if !ok && err != nil {
				reached = false
				break
			}
			if ok {
				if err := w.deliver(ctx, m.uid, raw); err != nil {
					return err
				}
			}
			if err := w.advance(ctx, p, m.uid); err != nil {
				return err
			}
		}
		if tooBig != 0 && reached {
			w.log.Warn("mail source: skipping a message whose body is larger than its declared size or the limit", "uid", tooBig)
			if err := w.advance(ctx, p, tooBig); err != nil {
				return err
			}
			return failed(core.SourceErrorProtocol, fmt.Errorf("message UID %d is larger than the server declared", tooBig))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// advance moves the cursor past uid and records it.
func (w *worker) advance(ctx context.Context, p *core.SourceProgress, uid imap.UID) error {
	p.LastUID = uint32(uid)
	return w.record(ctx, *p)
}

// list returns the UIDs and sizes of the messages above last, lowest
// first, at most about maxListed of them. Below the folder's UIDNEXT it asks
// for windows of UIDs, so that every answer has a bounded size; above it,
// for the rest (mail that arrived since the folder was opened).
func (w *worker) list(c *folder, last uint32) ([]listedMessage, error) {
	var out []listedMessage
	from, span := imap.UID(last+1), imap.UID(listWindow)
	for from < c.uidNext && len(out) < maxListed {
		to := min(from+span-1, c.uidNext-1)
		var window imap.UIDSet
		window.AddRange(from, to)
		n := len(out)
		var err error
		if out, err = w.listRange(c, window, from, to, int64(min(span, maxListed)), out); err != nil {
			return nil, err
		}
		if len(out) == n {
			span = min(2*span, maxListWindow)
		} else {
			span = listWindow
		}
		from = to + 1
	}
	if len(out) >= maxListed {
		return out, nil
	}
	// The client forgets the folder when the connection ends (the server's
	// BYE, or the worker being stopped mid-list).
	box := c.Mailbox()
	if box == nil {
		return nil, failed(core.SourceErrorConnect, errors.New("the connection ended while listing messages"))
	}
	var rest imap.UIDSet
	rest.AddRange(from, 0)
	// What came since EXAMINE: at most what the server says the folder holds.
	return w.listRange(c, rest, from, 0, int64(min(box.NumMessages, maxListed)), out)
}

// listRange appends the messages of set with a UID from from to to (0: no
// upper end), in UID order, streaming the answer and keeping only numbers.
// expect is how many answers the budget allows for.
func (w *worker) listRange(c *folder, set imap.UIDSet, from, to imap.UID, expect int64, out []listedMessage) ([]listedMessage, error) {
	c.meter.credit(listBytes + perListed*expect)
	cmd := c.Fetch(set, &imap.FetchOptions{UID: true, RFC822Size: true})
	n := len(out)
	for m := cmd.Next(); m != nil; m = cmd.Next() {
		var l listedMessage
		for item := m.Next(); item != nil; item = m.Next() {
			switch it := item.(type) {
			case imapclient.FetchItemDataUID:
				l.uid = it.UID
			case imapclient.FetchItemDataRFC822Size:
				l.size = it.Size
			}
		}
		// "n:*" names the last message even when it is below n.
		if l.uid >= from && (to == 0 || l.uid <= to) {
			out = append(out, l)
		}
	}
	if err := cmd.Close(); err != nil {
		return nil, fmt.Errorf("listing new messages: %w", err)
	}
	added := out[n:]
	slices.SortFunc(added, func(a, b listedMessage) int { return int(a.uid) - int(b.uid) })
	added = slices.CompactFunc(added, func(a, b listedMessage) bool { return a.uid == b.uid })
	return out[:n+len(added)], nil
}

// fetch reads the bodies of batch, each held to its declared size (plus
// sizeSlack) as it streams in. tooBig is the UID of a body over that (the
// session cannot go on: the rest of it is still on the wire), or 0.
func (w *worker) fetch(c *folder, batch []listedMessage) (bodies map[imap.UID][]byte, tooBig imap.UID, err error) {
	declared := make(map[imap.UID]int64, len(batch))
	uids := make([]imap.UID, len(batch))
	var largest int64
	for i, m := range batch {
		declared[m.uid], uids[i] = m.size, m.uid
		largest = max(largest, m.size)
		c.meter.credit(m.size + sizeSlack + responseBytes)
	}
	section := &imap.FetchItemBodySection{Peek: true}
	cmd := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{section}})
	bodies = make(map[imap.UID][]byte, len(batch))
	// abort ends the session midway through a response: closing the socket
	// first makes Close's draining of the unread rest fail at once (the
	// client's reader waits for us to take or drop each item).
	abort := func() {
		c.meter.Conn.Close()
		_ = cmd.Close()
	}
	for m := cmd.Next(); m != nil; m = cmd.Next() {
		var uid imap.UID
		var raw []byte
		for item := m.Next(); item != nil; item = m.Next() {
			switch it := item.(type) {
			case imapclient.FetchItemDataUID:
				uid = it.UID
			case imapclient.FetchItemDataBodySection:
				// The UID may come after the body: until it is known, the
				// largest declared size of the batch is the bound.
				bound := largest
				if d, ok := declared[uid]; ok {
					bound = d
				}
				if it.Literal == nil {
					continue
				}
				if it.Literal.Size() > bound+sizeSlack {
					if uid == 0 {
						uid = firstMissing(batch, bodies)
					}
					abort() // the rest of the literal is not read
					return bodies, uid, fmt.Errorf("message UID %d: a %d-byte body declared as %d", uid, it.Literal.Size(), bound)
				}
				// Bare LF line ends become CRLF, as over SMTP (docs/api.md).
				body := bytes.NewBuffer(make([]byte, 0, it.Literal.Size()+bytes.MinRead))
				if _, err := body.ReadFrom(core.NewCRLFReader(it.Literal)); err != nil {
					abort()
					return bodies, 0, failed(core.SourceErrorProtocol, fmt.Errorf("fetching messages: %w", err))
				}
				raw = body.Bytes()
			}
		}
		if _, asked := declared[uid]; asked && raw != nil {
			bodies[uid] = raw
		}
	}
	if err := cmd.Close(); err != nil {
		return bodies, 0, fmt.Errorf("fetching messages: %w", err)
	}
	return bodies, 0, nil
}

// firstMissing is the lowest UID of batch without a body yet.
func firstMissing(batch []listedMessage, bodies map[imap.UID][]byte) imap.UID {
	for _, m := range batch {
		if _, ok := bodies[m.uid]; !ok {
			return m.uid
		}
	}
	return batch[len(batch)-1].uid
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
	if core.QuotaOf(err) != "" {
		// Not past this message: the worker pauses, and takes it again
		// once mail is deleted.
		return failed(core.SourceErrorQuota, fmt.Errorf("message UID %d: %w", uid, err))
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
