package app

import (
	"context"
	"strings"
	"sync"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Mailboxes serves inboxes to ordinary mail clients (the IMAP server): a
// client logs in with the inbox's address and an identity key of the
// identity that owns it, and sees two folders: INBOX (received mail) and
// Sent (outgoing mail).
type Mailboxes struct {
	auth     *Auth           // a login is an identity key
	inboxes  *Inboxes        // the inbox a login opens
	reading  *Reading        // read flags and news of changes
	events   *Events         // news of mail other instances stored
	messages ports.MailStore // what the folders hold
}

// The folders of every inbox, and which mail each holds.
const (
	MailboxInbox = "INBOX"
	MailboxSent  = "Sent"
	MailboxJunk  = "Junk" // received mail filed as spam
)

// MailboxNames lists the folders in the order clients see them.
var MailboxNames = []string{MailboxInbox, MailboxSent, MailboxJunk}

// mailboxMail is the mail a folder holds: its direction, and whether it
// is the mail filed as spam. INBOX is case-insensitive (RFC 3501 §5.1),
// other names are not.
func mailboxMail(name string) (canonical string, dir core.Direction, spam bool, ok bool) {
	switch {
	case strings.EqualFold(name, MailboxInbox):
		return MailboxInbox, core.Incoming, false, true
	case name == MailboxSent:
		return MailboxSent, core.Outgoing, false, true
	case name == MailboxJunk:
		return MailboxJunk, core.Incoming, true, true
	}
	return "", "", false, false
}

// MailboxLogin is a mail client's session: the inbox it opened and the
// identity key it acts with.
type MailboxLogin struct {
	Principal core.Principal
	Inbox     core.Inbox
}

// errBadMailboxLogin is the one answer to every failed login, so that a
// guesser learns nothing about which part was wrong.
var errBadMailboxLogin = core.Unauthorized("Invalid inbox address or key.")

// Login checks a mail client's credentials: the inbox's address as the user
// name and an identity key of the identity owning it as the password. A
// management key does not log in: it is not fenced to one identity, and a
// mail client is a poor place to keep an account-wide key.
func (s *Mailboxes) Login(ctx context.Context, address, key string) (MailboxLogin, error) {
	p, err := s.auth.Authenticate(ctx, key)
	if core.KindOf(err) == core.KindUnauthorized {
		return MailboxLogin{}, errBadMailboxLogin
	}
	if err != nil {
		return MailboxLogin{}, err
	}
	inbox, err := s.inboxes.inboxAt(ctx, strings.ToLower(strings.TrimSpace(address)))
	if isNotFound(err) {
		return MailboxLogin{}, errBadMailboxLogin
	}
	if err != nil {
		return MailboxLogin{}, err
	}
	if p.KeyType != core.KeyIdentity || p.AccountID != inbox.AccountID || p.IdentityID != inbox.IdentityID {
		return MailboxLogin{}, errBadMailboxLogin
	}
	return MailboxLogin{Principal: p, Inbox: inbox}, nil
}

// Open opens one folder of the login's inbox; an unknown name is NotFound.
func (s *Mailboxes) Open(login MailboxLogin, name string) (*Mailbox, error) {
	canonical, dir, spam, ok := mailboxMail(name)
	if !ok {
		return nil, core.NotFound("No mailbox %q: there are %s.", name, strings.Join(MailboxNames, ", "))
	}
	return &Mailbox{s: s, login: login, Name: canonical, dir: dir, spam: spam}, nil
}

// Mailbox is one folder of an inbox as a mail client sees it.
type Mailbox struct {
	s     *Mailboxes
	login MailboxLogin
	Name  string
	dir   core.Direction
	spam  bool

	mu    sync.Mutex
	known map[int64]bool // the ids the last List returned
}

// UIDValidity is the folder's IMAP UIDVALIDITY. Message ids are never
// reused, so it never has to change; it is the inbox's creation second, so
// that an inbox made anew (after a reinstall) does not match a client's cache.
func (m *Mailbox) UIDValidity() uint32 {
	if v := uint32(m.login.Inbox.CreatedAt.Unix()); v != 0 {
		return v
	}
	return 1
}

// List lists the folder's messages by id, which is their IMAP UID: ids only
// grow, in the order messages are stored.
func (m *Mailbox) List(ctx context.Context) ([]ports.MailboxEntry, error) {
	entries, err := m.s.messages.MailboxEntries(ctx, m.login.Inbox.ID, m.dir, m.spam)
	if err != nil {
		return nil, err
	}
	known := make(map[int64]bool, len(entries))
	for _, e := range entries {
		known[e.ID] = true
	}
	m.mu.Lock()
	m.known = known
	m.mu.Unlock()
	return entries, nil
}

// listed fails unless id is a message of the folder seen by List.
func (m *Mailbox) listed(id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.known[id] {
		return core.NotFound("Message not found.")
	}
	return nil
}

// Raw is a listed message's RFC 5322 source.
func (m *Mailbox) Raw(ctx context.Context, id int64) ([]byte, error) {
	if err := m.listed(id); err != nil {
		return nil, err
	}
	return m.s.messages.RawMessage(ctx, m.login.Principal.AccountID, id)
}

// Message is a listed message as the API shows it (parsed, in UTF-8).
func (m *Mailbox) Message(ctx context.Context, id int64) (core.EmailMessage, error) {
	if err := m.listed(id); err != nil {
		return core.EmailMessage{}, err
	}
	return m.s.messages.Message(ctx, m.login.Principal.AccountID, id)
}

// SetSeen marks a listed message read or unread: IMAP's \Seen is is_read.
func (m *Mailbox) SetSeen(ctx context.Context, id int64, seen bool) error {
	if err := m.listed(id); err != nil {
		return err
	}
	_, err := m.s.reading.SetRead(ctx, m.login.Principal, id, seen)
	return err
}

// Label adds a label to a listed message or removes it: IMAP keywords are
// labels (Reading.Label).
func (m *Mailbox) Label(ctx context.Context, id int64, label string, add bool) error {
	if err := m.listed(id); err != nil {
		return err
	}
	_, err := m.s.reading.Label(ctx, m.login.Principal, id, label, add)
	return err
}

// Watch signals, without blocking, whenever mail of the folder's inbox is
// stored or marked read by this process, and whenever any instance commits
// an email event of the inbox's identity (the event log's signal: NOTIFY
// on PostgreSQL), so mail stored through another instance shows at once.
// Read states changed through other instances are not signalled: a watcher
// also looks again now and then. Call stop when done.
func (m *Mailbox) Watch() (changed <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	unwatch := m.s.reading.changes.watchWith(ch, m.login.Inbox.ID)
	unfollow := m.s.events.follow(m.login.Principal.Scope(""), []string{"email.*"}, ch)
	return ch, func() { unfollow(); unwatch() }
}

// changeFeed tells watchers of a key (an inbox, an identity) that
// something of it changed. The zero value is ready to use.
type changeFeed[K comparable] struct {
	mu       sync.Mutex
	watchers map[K]map[chan struct{}]bool
}

// watch registers one watcher of the inboxes: a change to any of them
// signals it.
func (f *changeFeed[K]) watch(inboxIDs ...K) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	return ch, f.watchWith(ch, inboxIDs...)
}

// watchWith registers ch (buffered, one signal) as a watcher of the inboxes.
func (f *changeFeed[K]) watchWith(ch chan struct{}, inboxIDs ...K) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watchers == nil {
		f.watchers = map[K]map[chan struct{}]bool{}
	}
	for _, id := range inboxIDs {
		if f.watchers[id] == nil {
			f.watchers[id] = map[chan struct{}]bool{}
		}
		f.watchers[id][ch] = true
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, id := range inboxIDs {
			delete(f.watchers[id], ch)
			if len(f.watchers[id]) == 0 {
				delete(f.watchers, id)
			}
		}
	}
}

// notify signals every watcher of the inboxes; a watcher already signalled
// keeps its one pending signal.
func (f *changeFeed[K]) notify(inboxIDs ...K) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range inboxIDs {
		for ch := range f.watchers[id] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
