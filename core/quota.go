package core

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Quota names a per-account limit, as GET /api/health/whoami/ shows it
// (usage and quotas) and as an error over it names it.
type Quota string

const (
	QuotaStorage      Quota = "storage"        // bytes of stored mail: each message's source, uploads, and drafts' bodies
	QuotaIdentities   Quota = "identities"     // identities of the account
	QuotaInboxes      Quota = "inboxes"        // inboxes of the account, every identity's first one included
	QuotaPhones       Quota = "phones"         // phone numbers of the account
	QuotaVaultItems   Quota = "vault_items"    // passwords and secrets of one identity
	QuotaSendsPerHour Quota = "sends_per_hour" // mail, texts and calls sent or placed in the last hour
)

// QuotaWebhooksPerIdentity bounds the webhooks an identity key may hold
// (WebhookRoom). It is checked against the account's endpoints, which are
// few and read anyway, so it is not among the counted Quotas.
const QuotaWebhooksPerIdentity Quota = "webhooks_per_identity"

// Quotas lists every quota, in the order whoami shows them.
var Quotas = []Quota{QuotaStorage, QuotaIdentities, QuotaInboxes, QuotaPhones, QuotaVaultItems, QuotaSendsPerHour}

// What counts toward QuotaStorage, in bytes, is written here once: the
// SQL store records each row's figure in its stored_bytes column (triggers
// keep accounts.storage_bytes as their sum), the memory store sums them.

// MessageStoredBytes is what a stored message takes: its source as
// received or sent (its attachments' bytes are in it).
func MessageStoredBytes(raw []byte) int64 { return int64(len(raw)) }

// AttachmentStoredBytes is what a stored attachment takes: an upload's
// bytes, or none for a message's attachment whose bytes stay in the
// message's source.
func AttachmentStoredBytes(content []byte, inSource bool) int64 {
	if inSource {
		return 0
	}
	return int64(len(content))
}

// DraftStoredBytes is what a draft takes: its bodies, text and HTML, in
// bytes of UTF-8 (not characters).
func DraftStoredBytes(d Draft) int64 {
	n := int64(len(d.HTML))
	if d.Content != nil {
		n += int64(len(*d.Content))
	}
	return n
}

// SendWindow is how far back sends_per_hour looks.
const SendWindow = time.Hour

// Limits are the operator's quotas per account (CALLSIGN_QUOTA_*): a quota
// absent or 0 is unlimited.
type Limits map[Quota]int64

// Usage is what an account holds against its quotas, for the quotas that
// were counted.
type Usage struct {
	Used map[Quota]int64
	// OldestSend is the earliest send still inside the window, when
	// sends_per_hour was counted: the window passing it frees a send.
	OldestSend time.Time
}

// quotasOf names the quotas act must be under, in the order they are
// checked. An identity comes with its first inbox, so it needs room for
// both; sending stores a copy of the message, so it needs storage.
func quotasOf(act Act) []Quota {
	switch act {
	case ActCreateIdentity:
		return []Quota{QuotaIdentities, QuotaInboxes}
	case ActCreateInbox:
		return []Quota{QuotaInboxes}
	case ActBuyNumber:
		return []Quota{QuotaPhones}
	case ActSendMail:
		return []Quota{QuotaStorage, QuotaSendsPerHour}
	case ActSendSMS, ActPlaceCall:
		return []Quota{QuotaSendsPerHour}
	case ActReceiveMail, ActUpload, ActSaveDraft:
		return []Quota{QuotaStorage}
	case ActStoreVaultItem:
		return []Quota{QuotaVaultItems}
	}
	return nil
}

// Limiting lists the quotas act must be under that l limits: what there is
// to count before act.
func (l Limits) Limiting(act Act) []Quota {
	var out []Quota
	for _, q := range quotasOf(act) {
		if l[q] > 0 {
			out = append(out, q)
		}
	}
	return out
}

// Allow says whether an account using u may do act under l, at now. A
// quota is reached when the usage is at its limit: a size or a count is
// 403; sends_per_hour is 429 with the seconds until the oldest send in the
// window leaves it.
func (l Limits) Allow(act Act, u Usage, now time.Time) error {
	for _, q := range l.Limiting(act) {
		used, limit := u.Used[q], l[q]
		if used < limit {
			continue
		}
		e := &Error{Kind: KindForbidden, Quota: q}
		switch q {
		case QuotaSendsPerHour:
			wait := u.OldestSend.Add(SendWindow).Sub(now)
			e.Kind, e.RetryAfterSeconds = KindRateLimited, max(1, int(math.Ceil(wait.Seconds())))
			e.Message = fmt.Sprintf("Quota sends_per_hour reached: %d of %d sent in the last hour. %s may resume in %d seconds.",
				used, limit, act, e.RetryAfterSeconds)
		case QuotaStorage:
			e.Message = fmt.Sprintf("Quota storage reached: %d of %d bytes used. %s needs room under it; delete mail to make some.",
				used, limit, act)
		case QuotaVaultItems:
			e.Message = fmt.Sprintf("Quota vault_items reached: this identity holds %d of %d passwords and secrets. %s needs room under it.",
				used, limit, act)
		default:
			e.Message = fmt.Sprintf("Quota %s reached: %d of %d. %s needs room under it.", q, used, limit, act)
		}
		return e
	}
	return nil
}

// QuotaOf names the quota err reports reached, or "" when it is no such error.
func QuotaOf(err error) Quota {
	var e *Error
	if errors.As(err, &e) {
		return e.Quota
	}
	return ""
}
