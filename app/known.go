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
