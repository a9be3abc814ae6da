package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// Store is every store at once: the SQL store and the memory fake
// implement it whole, and app.New hands each service the stores it uses,
// one or two services per store (the service structs in app name theirs).
//
// Stores persist and lock; they decide nothing. Where a decision needs what
// only a transaction can see (which thread a message joins, whether a
// status may move), the store asks core inside that transaction.
//
// Conventions for every method: a missing row is a core NotFound error; a
// uniqueness clash is a core Conflict error whose Fields name the field;
// lists take a core.Scope and return nothing when it is Empty; lists that
// can grow take a Page, select only that page, and count every match when
// the Page asks (the total is 0 otherwise).
type Store interface {
	Pinger
	SchemaStatus
	AccountStore
	KeyStore
	IdentityStore
	InboxStore
	VaultStore
	ContactStore
	MailStore
	OutboxStore
	DomainStore
	SuppressionStore
	MailSourceStore
	DeviceGrantStore
	RefreshFamilyStore
	PhoneStore
	SMSStore
	CallStore
	IdempotencyStore
	VerificationStore
	EventStore
	WebhookStore
	RuleStore
	DraftStore
	UsageStore
	CertificateStore
}

// UsageStore counts what an account holds against its quotas, from the
// database (so every instance sees the same), each with one indexed read.
type UsageStore interface {
	// Usage counts the quotas asked for; the others are absent from Used.
	// vault_items is identityID's, or with "" the highest of the account's
	// identities; sends_per_hour counts mail and texts sent since since,
	// with the oldest of them.
	Usage(ctx context.Context, accountID, identityID string, since time.Time, quotas []core.Quota) (core.Usage, error)
}

// VerificationFilter narrows the verifications one identity received.
type VerificationFilter struct {
	AccountID  string
	IdentityID string
	After      time.Time // strictly after, when not zero
	// From keeps senders (addresses, numbers) containing it, ignoring case.
	From   string
	Source core.VerificationSource // "" for mail and texts
	Limit  int
}

// VerificationStore reads the codes and links received messages carried,
// as stored with them (EmailMessage.Verification, SMSMessage.Verification).
type VerificationStore interface {
	// Verifications lists an identity's, newest first, mail and texts
	// together.
	Verifications(ctx context.Context, f VerificationFilter) ([]core.ReceivedVerification, error)
}

// Page is the part of a list a caller asked for: at most Limit items
// after the first Offset, in the list's order. Limit 0 means every item,
// for callers that must have them all (a conversation's messages).
type Page struct {
	Limit  int
	Offset int
	// Count asks for the number of every match as well (the envelope's count).
	Count bool
	// CountUpTo, when Count and not 0, stops counting at this many matches.
	CountUpTo int
}

// AccountStore keeps accounts.
type AccountStore interface {
	CreateAccount(ctx context.Context, a core.Account) error
	Account(ctx context.Context, id string) (core.Account, error)
	AccountByEmail(ctx context.Context, email string) (core.Account, error)
	SetSubscription(ctx context.Context, id string, active bool) error
	SetPasswordHash(ctx context.Context, id, hash string) error
	// DeleteAccount removes the account and everything it owns.
	DeleteAccount(ctx context.Context, id string) error
}

// KeyStore keeps API keys (their hashes, never the keys).
type KeyStore interface {
	// CreateKey stores k and returns its new id.
	CreateKey(ctx context.Context, k core.APIKey) (int64, error)
	KeyByHash(ctx context.Context, hash []byte) (core.APIKey, error)
	Key(ctx context.Context, accountID string, id int64) (core.APIKey, error)
	// Keys lists an account's keys of one type, oldest first; identityID ""
	// means every identity.
	Keys(ctx context.Context, accountID string, t core.KeyType, identityID string, page Page) ([]core.APIKey, int, error)
	// DeleteKey deletes a key unless core.MayDeleteKey refuses, asked
	// where no other delete of the account's keys can interleave.
	DeleteKey(ctx context.Context, accountID string, id int64) error
	// SetKeyCanSend sets an identity key's send right.
	SetKeyCanSend(ctx context.Context, accountID string, id int64, canSend bool) error
	TouchKey(ctx context.Context, id int64, at time.Time) error
}

// IdentityStore keeps identities.
type IdentityStore interface {
	// CreateIdentity stores an identity with its first inbox, and its phone
	// number when one was provisioned for it, in one transaction, and
	// returns the inbox's new id. A taken name clashes on "name", a taken
	// address on "email".
	CreateIdentity(ctx context.Context, id core.Identity, inbox core.Inbox, phone *core.PhoneNumber) (int64, error)
	Identity(ctx context.Context, accountID, id string) (core.Identity, error)
	// Identities lists the identities in scope, oldest first.
	Identities(ctx context.Context, scope core.Scope, page Page) ([]core.Identity, int, error)
	// UpdateIdentity saves the mutable fields (name, updated time).
	UpdateIdentity(ctx context.Context, id core.Identity) error
	IdentityNameTaken(ctx context.Context, accountID, name string) (bool, error)
	// DeleteIdentity removes an identity and everything it owns, in one
	// transaction: its inboxes with their mail and mail sources, its phone
	// number with its text messages, its keys, passwords, secrets,
	// contacts, voice agent, device grants and the suppressions its mail
	// caused.
	DeleteIdentity(ctx context.Context, accountID, id string) error
}

// InboxStore keeps inboxes.
type InboxStore interface {
	CreateInbox(ctx context.Context, in core.Inbox) (int64, error)
	Inbox(ctx context.Context, id int64) (core.Inbox, error)
	InboxByEmail(ctx context.Context, email string) (core.Inbox, error)
	// FirstInbox is the oldest inbox of the account, or of the whole
	// service when accountID is "".
	FirstInbox(ctx context.Context, accountID string) (core.Inbox, error)
	// Inboxes lists the inboxes in scope, newest first.
	Inboxes(ctx context.Context, scope core.Scope, page Page) ([]core.Inbox, int, error)
	// DeleteInbox removes an inbox with its messages (their sources,
	// attachments and outbox entries), threads and mail source, in one
	// transaction. An identity keeps at least one inbox: deleting its last
	// one is a Conflict.
	DeleteInbox(ctx context.Context, accountID string, id int64) error
}

// StoredPassword is a password entry as stores keep it: Password and Notes
// of Entry are empty, their sealed forms are beside it.
type StoredPassword struct {
	Entry    core.PasswordEntry
	Password []byte // sealed
	Notes    []byte // sealed; nil when there are no notes
	TOTP     []byte // sealed; nil when the entry has no TOTP key
}

// StoredSecret is a secret as stores keep it: Value of Secret is empty.
type StoredSecret struct {
	Secret core.Secret
	Value  []byte // sealed
}

// PasswordFilter narrows a password list.
type PasswordFilter struct {
	Scope core.Scope
	// Host, when set, matches entries whose domain's host is it or a subdomain of it.
	Host string
	Page Page
}

// SecretFilter narrows a secret list.
type SecretFilter struct {
	Scope core.Scope
	Key   string // exact key, when set
	Page  Page
}

// SealedValue names one sealed column value, for key rotation.
type SealedValue struct {
	Table  string // "passwords", "secrets", …
	ID     string
	Field  string
	Sealed []byte
}

// VaultStore keeps passwords and secrets, sealed.
type VaultStore interface {
	CreatePassword(ctx context.Context, p StoredPassword) error
	Password(ctx context.Context, accountID, id string) (StoredPassword, error)
	// Passwords lists entries in scope, oldest first.
	Passwords(ctx context.Context, f PasswordFilter) ([]StoredPassword, int, error)
	UpdatePassword(ctx context.Context, p StoredPassword) error
	DeletePassword(ctx context.Context, accountID, id string) error

	// CreateSecret clashes on "key" when the identity has the key already.
	CreateSecret(ctx context.Context, s StoredSecret) error
	Secret(ctx context.Context, accountID, id string) (StoredSecret, error)
	// Secrets lists secrets in scope, oldest first.
	Secrets(ctx context.Context, f SecretFilter) ([]StoredSecret, int, error)
	UpdateSecret(ctx context.Context, s StoredSecret) error
	DeleteSecret(ctx context.Context, accountID, id string) error

	// SealedValues pages through every sealed value of every table, in a
	// stable order, starting after the given one (zero value: from the start).
	SealedValues(ctx context.Context, after SealedValue, limit int) ([]SealedValue, error)
	// ReplaceSealed swaps v's sealed bytes for replacement, only if they are
	// still v.Sealed (a concurrent update wins); it reports whether it did.
	ReplaceSealed(ctx context.Context, v SealedValue, replacement []byte) (bool, error)
}

// ContactFilter narrows a contact list. Empty fields do not filter.
type ContactFilter struct {
	Scope       core.Scope
	Source      core.ContactSource
	Email       string // exact, ignoring case
	PhoneNumber string // exact
	// Query matches email, display name, nickname or phone number as a
	// substring, ignoring case.
	Query string
	// Search, when set, keeps the contacts whose names, email or number
	// hold the query's words, most relevant first, each with its
	// Highlights; see MessageFilter.Search.
	Search *core.SearchQuery
	// NewestFirst lists by creation time, newest first (oldest first by
	// default); a search stays most relevant first.
	NewestFirst bool
	Page        Page
}

// ContactStore keeps contacts. An identity has at most one contact per
// email (ignoring case) and one per phone number: clashes on "email" or
// "phone_number".
type ContactStore interface {
	CreateContact(ctx context.Context, c core.Contact) error
	Contact(ctx context.Context, accountID, id string) (core.Contact, error)
	// Contacts lists contacts in scope, oldest first.
	Contacts(ctx context.Context, f ContactFilter) ([]core.Contact, int, error)
	UpdateContact(ctx context.Context, c core.Contact) error
	DeleteContact(ctx context.Context, accountID, id string) error
	// RecordCorrespondent stores c unless the identity already has a contact
	// with its email (or, for a phone-only contact, its number), and reports
	// whether it stored it.
	RecordCorrespondent(ctx context.Context, c core.Contact) (bool, error)
}

// NewMail is one message to store in one inbox, received or sent, with
// everything that must be committed with it.
type NewMail struct {
	// Message has every field but ID, ThreadID and CreatedAt, which the store
	// assigns (ThreadID and CreatedAt as core.FileMail decides: creation
	// times strictly increase per account). Message.CreatedAt carries the
	// current time.
	Message core.EmailMessage
	// NewThreadID is the thread the message starts when it answers no
	// message of the inbox (core.JoinThread).
	NewThreadID string
	Raw         []byte
	// HTMLInRaw says that Message.HTML is what the MailParser reads from
	// Raw (received mail), bounded by BoundBodies: a store may then keep
	// Raw alone and read the HTML back from it.
	HTMLInRaw   bool
	Attachments []AttachmentContent
	// Correspondent, when set, is recorded as an auto contact unless the
	// identity already knows the address.
	Correspondent *core.Contact
	// Outbox, when set, queues the message for delivery in the same transaction.
	Outbox *OutboxEntry
	// Dedupe asks core.FileMail to skip the message when the inbox already
	// received it: for redeliveries (a retried local delivery, a resynced
	// IMAP source) that must not make copies.
	Dedupe bool
	// SearchText is more text the search index holds for the message
	// beside its subject and text body: its text/* attachments' text.
	SearchText string
	// FromDraft, when set, is the draft the message was made from: it is
	// deleted in the same transaction, and when it is gone already (sent
	// or deleted by another request) nothing is stored and the call fails
	// with NotFound. So a draft is sent once.
	FromDraft *core.Draft
}

// AttachmentContent is an attachment with its bytes. The attachments of a
// stored message are not stored twice: their bytes stay in the message's
// source, InSource is set, Content is empty and Position says which of the
// source's parts it is (counted as the MailParser lists them).
type AttachmentContent struct {
	core.Attachment
	Content  []byte
	InSource bool
	Position int
}

// OutboxEntry is a message waiting to leave.
type OutboxEntry struct {
	MessageID    int64
	AccountID    string
	EnvelopeFrom string
	Recipients   []string // still to deliver
	Failures     []string // "address: reason" of recipients that failed for good
	Attempts     int
	NextAttempt  time.Time
	GiveUpAt     time.Time
}

// MessageFilter narrows the message list (the spec's cursor polling).
type MessageFilter struct {
	Scope     core.Scope
	InboxID   int64
	ThreadID  string
	Direction core.Direction
	FromEmail string
	IsRead    *bool
	// Authenticated, when set, keeps messages whose verdict is pass (true)
	// or anything else (false).
	Authenticated *bool
	CreatedAfter  *time.Time
	// Labels keeps messages carrying every one of them, ExcludeLabels
	// those carrying none of them (core.HasLabels).
	Labels, ExcludeLabels []string
	// IncludeBlocked keeps blocked messages, which lists leave out.
	IncludeBlocked bool
	// IncludeSpam keeps messages filed as spam, which lists leave out.
	IncludeSpam bool
	Limit       int
	Offset      int
	// CountUpTo, when not 0, stops counting matches at this many.
	CountUpTo int
	// Search, when set, keeps the messages the query matches, most
	// relevant first (then newest), each with its Highlights.
	Search *core.SearchQuery
	// NewestFirst orders by creation time, newest first, even a search.
	NewestFirst bool
}

// ThreadFilter narrows the thread summaries.
type ThreadFilter struct {
	Scope     core.Scope
	InboxID   int64
	HasUnread *bool
	// Labels keeps threads whose labels (the union of their messages')
	// hold every one of them, ExcludeLabels those holding none of them.
	Labels, ExcludeLabels []string
	// Search, when set, keeps threads with a message the query matches
	// (as MessageFilter.Search); the order stays newest activity first.
	// Each thread carries the Highlights of its newest matching message.
	Search *core.SearchQuery
	// After, when set, starts the list after this thread (keyset paging:
	// a deep page costs what the first does, where an offset reads every
	// thread before it).
	After *ThreadCursor
	// Page bounds the list; a zero Limit reads every match.
	Page Page
}

// ThreadCursor is a place in the thread list, which runs by latest
// activity, newest first, then by id.
type ThreadCursor struct {
	LastMessageAt time.Time
	ID            string
}

// MailboxEntry is a message as a mailbox view lists it.
type MailboxEntry struct {
	ID        int64
	IsRead    bool
	Labels    []string // sorted; IMAP shows them as keywords
	Size      int64    // of the raw source
	CreatedAt time.Time
}

// MailArrivals is offered by a MailStore whose concurrent SaveMail calls
// share a commit: a delivery says it is on its way once its checks that
// may wait on the network are done, so that a commit can wait briefly for
// it rather than the next paying for a commit of its own.
type MailArrivals interface {
	// Arriving announces a caller of SaveMail; done says it has finished,
	// whether it called or not.
	Arriving() (done func())
}

// MailStore keeps messages, their threads and attachments.
type MailStore interface {
	// SaveMail stores messages with their attachments, thread updates,
	// correspondents and outbox entries, all in one transaction (several
	// calls may share one commit), and returns them as stored. Where each
	// goes is core.FileMail's to decide, inside that transaction. When it
	// returns nil, every message is durable.
	SaveMail(ctx context.Context, mails []NewMail) ([]core.EmailMessage, error)
	// Message and Messages give each message with its labels.
	Message(ctx context.Context, accountID string, id int64) (core.EmailMessage, error)
	// Messages lists messages oldest first, with the total count of matches.
	Messages(ctx context.Context, f MessageFilter) ([]core.EmailMessage, int, error)
	// MessageByMessageID finds a message of an inbox by its Message-ID header.
	MessageByMessageID(ctx context.Context, inboxID int64, messageID string) (core.EmailMessage, error)
	RawMessage(ctx context.Context, accountID string, id int64) ([]byte, error)
	// MailboxEntries lists an inbox's messages of one direction, by id, in
	// the light form an IMAP mailbox view needs: those filed as spam, or
	// those that are not; blocked messages are left out.
	MailboxEntries(ctx context.Context, inboxID int64, dir core.Direction, spam bool) ([]MailboxEntry, error)
	// SetRead marks a message read or unread, and moves its thread's unread
	// count by core.UnreadDelta.
	SetRead(ctx context.Context, accountID string, id int64, read bool) error
	// LabelMessage adds label to a message (add) or removes it, as
	// core.AddLabel and core.RemoveLabel decide under the message's lock,
	// and writes core.LabelEvent in the same transaction when that changed
	// its labels. It returns the message as it now is.
	LabelMessage(ctx context.Context, accountID string, id int64, label string, add bool) (core.EmailMessage, error)
	// SetSpam files a received message as spam or moves it out, with the
	// verification it then offers (nil for none), folds its thread again,
	// writes core.SpamMoveEvent, and returns the message as stored.
	SetSpam(ctx context.Context, accountID string, id int64, spam bool, v *core.Verification) (core.EmailMessage, error)
	// DeleteMessage removes a message with its source, its attachments and
	// its outbox entry (so it is never sent), and folds what is left of its
	// thread into core.Thread.Recount, oldest first, in one transaction; a
	// thread left empty goes too.
	DeleteMessage(ctx context.Context, accountID string, id int64) error

	// Thread is a thread with its labels.
	Thread(ctx context.Context, accountID, id string) (core.Thread, error)
	// Threads lists thread summaries, latest activity first, and counts
	// them when f.Page asks; a thread that holds only blocked mail (no
	// message counted) is left out.
	Threads(ctx context.Context, f ThreadFilter) ([]core.Thread, int, error)

	// SaveUpload stores an attachment uploaded to be sent.
	SaveUpload(ctx context.Context, a AttachmentContent) error
	Attachment(ctx context.Context, accountID, id string) (AttachmentContent, error)
}

// OutboxStore keeps the messages waiting to leave; SaveMail queues them.
type OutboxStore interface {
	// ClaimOutbox leases up to limit entries that are due, so no other
	// worker (of this instance or another) takes them until the lease ends.
	ClaimOutbox(ctx context.Context, now, leaseUntil time.Time, limit int) ([]OutboxEntry, error)
	// NextOutboxAttempt is the earliest time an entry becomes claimable
	// (due and not leased); false when the outbox is empty.
	NextOutboxAttempt(ctx context.Context) (time.Time, bool, error)
	// RetryOutbox keeps an entry for another attempt at e.NextAttempt; the
	// message, still queued, shows lastError as its delivery error.
	RetryOutbox(ctx context.Context, e OutboxEntry, lastError string) error
	// FinishOutbox removes an entry and records the message's final status
	// and what became of each recipient, with the message's
	// core.DeliveryEvent, in one transaction.
	FinishOutbox(ctx context.Context, messageID int64, status core.DeliveryStatus, deliveryError string, recipients []core.Recipient) error
	// SetRecipients records what became of each recipient of a message.
	SetRecipients(ctx context.Context, messageID int64, recipients []core.Recipient) error
	// MessageByBounceToken finds the sent message a VERP token names.
	MessageByBounceToken(ctx context.Context, token string) (core.EmailMessage, error)
	// SentMessageByMessageID finds the message we sent with that Message-ID
	// (without brackets): the one a provider's delivery report names.
	SentMessageByMessageID(ctx context.Context, messageID string) (core.EmailMessage, error)
	// ApplyReport applies a delivery status notification to a sent message
	// (core.ApplyReport, under the message's lock) and returns the message
	// as it now is, and the report's lines it applied; their events
	// (core.ReportEvents) are written in the same transaction.
	ApplyReport(ctx context.Context, messageID int64, report []core.DSNRecipient) (core.EmailMessage, []core.DSNRecipient, error)
}
