package app

import (
	"strings"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
)

// knownSenders remembers recent correspondents already recorded as contacts,
// so a busy inbox does not try to insert the same contact with every
// message. It is only a shortcut: forgetting costs one redundant insert
// (which the store ignores), so it simply starts over when full.
type knownSenders struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

const (
	knownSendersMax = 50_000
	knownSendersTTL = 10 * time.Minute
)

func senderKey(identityID, email string) string { return identityID + "\x00" + strings.ToLower(email) }

func (k *knownSenders) has(identityID, email string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	at, ok := k.seen[senderKey(identityID, email)]
	return ok && now.Sub(at) < knownSendersTTL
}

func (k *knownSenders) add(identityID, email string, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil || len(k.seen) >= knownSendersMax {
		k.seen = map[string]time.Time{}
	}
	k.seen[senderKey(identityID, email)] = now
}

// inboxCache remembers recently resolved recipient addresses: every
// delivery looks its recipients up, and an address keeps its inbox for
// life. Entries expire so that a deleted account stops receiving mail soon
// after; misses are never cached, so a new inbox receives mail at once.
type inboxCache struct {
	mu   sync.Mutex
	byAt map[string]cachedInbox
}

type cachedInbox struct {
	inbox core.Inbox
	at    time.Time
}

const (
	inboxCacheMax = 50_000
	inboxCacheTTL = time.Minute
)

func (c *inboxCache) get(email string, now time.Time) (core.Inbox, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byAt[email]
	return e.inbox, ok && now.Sub(e.at) < inboxCacheTTL
}

// forget drops an address whose inbox was deleted.
func (c *inboxCache) forget(email string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byAt, email)
}

// forgetIdentity drops every address of a deleted identity.
func (c *inboxCache) forgetIdentity(identityID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for email, e := range c.byAt {
		if e.inbox.IdentityID == identityID {
			delete(c.byAt, email)
		}
	}
}

func (c *inboxCache) put(email string, in core.Inbox, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byAt == nil || len(c.byAt) >= inboxCacheMax {
		c.byAt = map[string]cachedInbox{}
	}
	c.byAt[email] = cachedInbox{in, now}
}

// storageRoom remembers, per account, a storage reading that left room
// under the quota, for roomFor: the SMTP listener asks at every RCPT. What
// this instance stores is added to the reading as it commits, so this
// instance refuses the RCPT after the message that fills the quota, as
// without the cache; mail stored by another instance is seen when the
// reading expires, after storageRoomTTL (a time-to-live, as storage
// changes are no events: past the quota by at most a second of another
// instance's mail, as messages in flight together already can be). Only
// room is remembered: an account at its quota is read at every RCPT, so
// mail deleted anywhere is seen at once.
type storageRoom struct {
	mu       sync.Mutex
	readings map[string]storageReading
	// stored counts each account's commits, so that a reading made while
	// one committed, which may not include it, is not kept.
	stored map[string]uint64
}

type storageReading struct {
	used int64 // as read, plus what this instance stored since
	at   time.Time
}

const (
	storageRoomMax = 50_000
	storageRoomTTL = time.Second
)

// fits reports whether a fresh reading of the account is under limit.
func (c *storageRoom) fits(accountID string, limit int64, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.readings[accountID]
	return ok && r.used < limit && now.Sub(r.at) < storageRoomTTL && !now.Before(r.at)
}

// stores is the account's count of commits, taken before a reading.
func (c *storageRoom) stores(accountID string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stored[accountID]
}

// put keeps a reading begun when the account's count was stores, unless a
// commit came since.
func (c *storageRoom) put(accountID string, used int64, now time.Time, stores uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stored[accountID] != stores {
		return
	}
	if c.readings == nil || len(c.readings) >= storageRoomMax {
		c.readings = map[string]storageReading{}
	}
	c.readings[accountID] = storageReading{used, now}
}

// add counts bytes this instance stored for the account.
func (c *storageRoom) add(accountID string, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stored == nil || len(c.stored) >= storageRoomMax {
		c.stored, c.readings = map[string]uint64{}, map[string]storageReading{}
	}
	c.stored[accountID]++
	if r, ok := c.readings[accountID]; ok {
		r.used += bytes
		c.readings[accountID] = r
	}
}
