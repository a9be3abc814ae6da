// Package memory holds in-memory fakes of every driven port, for the app's
// unit tests and the store contract suite. The store only persists: every
// decision (which thread a message joins, creation times, unread counts,
// summaries, which status may move) is core's, asked exactly as the SQL
// store asks it. What it keeps is the store contract the suite holds both
// to (uniqueness, scoping, ordering), so tests can trust it.
package memory

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Store is an in-memory ports.Store.
type Store struct {
	mu         sync.Mutex
	accounts   map[string]*accountRow
	keys       map[int64]*keyRow
	identities map[string]*identityRow
	inboxes    map[int64]*inboxRow
	passwords  map[string]*passwordRow
	secrets    map[string]*secretRow
	contacts   map[string]*contactRow
	mail       mailTables
	phone      phoneTables
	sources    map[string]*sourceRow // by id; created on first use
	auth       authTables
	trust      trustTables // domains, keys, suppressions; created on first use
	seq        int64
	// idempotency keeps idempotency keys; created on first use.
	idempotency map[idempotencyID]*core.IdempotencyRecord
	events      eventTables            // created on first use
	webhooks    webhookTables          // created on first use
	rules       map[string]*core.Rule  // created on first use
	drafts      map[string]*core.Draft // created on first use
	// sends are the times each account sent mail or texts, kept when
	// what was sent is deleted, as the SQL store's sends table; created
	// on first use.
	sends map[string][]time.Time
	// certificates are ACME's cache and leases; created on first use.
	certificates certificateTables
	// Fail, when set, is returned by every call: a store that is down.
	Fail error
	// EventData renders events' data; nil means plain JSON of the subject.
	EventData ports.EventEncoder
}

// NewStore makes an empty store.
func NewStore() *Store {
	return &Store{
		accounts:   map[string]*accountRow{},
		keys:       map[int64]*keyRow{},
		identities: map[string]*identityRow{},
		inboxes:    map[int64]*inboxRow{},
		passwords:  map[string]*passwordRow{},
		secrets:    map[string]*secretRow{},
		contacts:   map[string]*contactRow{},
	}
}

// lock takes the store's lock and reports the injected failure, if any.
func (s *Store) lock() error {
	s.mu.Lock()
	if s.Fail != nil {
		s.mu.Unlock()
		return s.Fail
	}
	return nil
}

func (s *Store) nextID() int64 {
	s.seq++
	return s.seq
}

// Ping answers unless a failure was injected.
func (s *Store) Ping(context.Context) error {
	if err := s.lock(); err != nil {
		return err
	}
	s.mu.Unlock()
	return nil
}

// PendingMigrations is always none: the memory store has no schema.
func (s *Store) PendingMigrations(context.Context) (int, error) { return 0, nil }

// Clock is a settable ports.Clock; the zero value starts at a fixed instant
// and moves only when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
	// Step, when set, moves the clock forward after every reading, so that
	// things made one after another get distinct times.
	Step time.Duration
}

// NewClock starts a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now tells the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	}
	now := c.now
	c.now = c.now.Add(c.Step)
	return now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	}
	c.now = c.now.Add(d)
}

// IDs mints random UUIDs, like the real adapter.
type IDs struct{}

// NewUUID returns a random (version 4) UUID.
func (IDs) NewUUID() string { return uuid.NewString() }

// before orders rows by creation time, then by id, as the SQL store does.
func before(at time.Time, id string, bt time.Time, bid string) bool {
	if !at.Equal(bt) {
		return at.Before(bt)
	}
	return id < bid
}

// pageOf is the page p of rows, and the number of rows when p asks for it.
func pageOf[T any](rows []T, p ports.Page) ([]T, int) {
	total := 0
	if p.Count {
		total = countUpTo(len(rows), p.CountUpTo)
	}
	if p.Limit == 0 {
		return rows, total
	}
	start := min(p.Offset, len(rows))
	return rows[start:min(start+p.Limit, len(rows))], total
}

// countUpTo is a count of n matches that stops at upTo (0: never).
func countUpTo(n, upTo int) int {
	if upTo > 0 {
		return min(n, upTo)
	}
	return n
}
