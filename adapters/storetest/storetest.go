// Package storetest is the one contract every ports.Store implementation is
// held to. The memory fake and the SQL store (SQLite and PostgreSQL) run the
// same cases, so a fake that passes here behaves like the real thing.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Opener makes an empty store for one test.
type Opener func(t *testing.T) ports.Store

// Run runs every contract case against stores made by open.
func Run(t *testing.T, open Opener) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, &fixture{t: t, s: open(t), ctx: context.Background(), now: t0})
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, f *fixture)
}

// cases is the contract, one named function per case, so that a failure
// names both its case and where it is written.
var cases = []testCase{
	{"accounts/create and read", testAccountsCreateAndRead},
	{"accounts/email is unique ignoring case", testAccountsEmailUnique},
	{"accounts/subscription and password", testAccountsSubscriptionAndPassword},
	{"accounts/delete removes what the account owns", testAccountsDeleteCascades},
	{"accounts/usage against the quotas follows every change", testUsage},
	{"accounts/storage is core's figure of every row, as rows change", testStoredBytes},
	{"keys/create, find by hash, list, touch, delete", testKeys},
	{"identities/create with inbox, read back", testIdentitiesCreate},
	{"identities/a clash stores nothing", testIdentitiesClashStoresNothing},
	{"identities/list follows the scope", testIdentitiesListScope},
	{"identities/update name", testIdentitiesUpdateName},
	{"inboxes/more inboxes, listed newest first in scope", testInboxes},
	{"passwords/create, read, update, delete", testPasswords},
	{"passwords/list by scope and host", testPasswordsList},
	{"secrets/keys are unique per identity", testSecretsUnique},
	{"vault/sealed values page through everything and swap only unchanged values", testSealedValues},
	{"contacts/unique email and number per identity", testContactsUnique},
	{"contacts/filters and search", testContactsFiltersAndSearch},
	{"contacts/record a correspondent once", testContactsRecordCorrespondent},
	{"mail/threads by In-Reply-To and References within an inbox", testMailThreads},
	{"mail/message, attachments, raw, contact and outbox stored together", testMailStoredTogether},
	{"mail/attachments kept in the source are stored without their bytes", testMailAttachmentsInSource},
	{"mail/creation times are strictly increasing per account", testMailCreationTimes},
	{"mail/concurrent saves: every message stored once, cursor exact", testMailConcurrentSaves},
	{"mail/list filters, pages and scope", testMailList},
	{"mail/a list carries previews, one message its bodies and truncated", testMailListSummaries},
	{"mail/read state keeps thread counts", testMailReadState},
	{"mail/threads list newest activity first", testMailThreadList},
	{"mail/dedupe skips a redelivered message", testMailDedupe},
	{"mail/an SMTP retry of the same bytes within a day is the first copy", testMailRedelivery},
	{"mail/messages stored together see each other and what was stored before", testMailOneBatch},
	{"mail/a Message-ID both sent and received: redeliveries and threads", testMailSentAndReceivedMessageID},
	{"mail/outbox claims, leases, retries and finishes", testMailOutbox},
	{"mail/uploads", testMailUploads},
	{"domains/create, read, list; one account per name", testDomainsCreate},
	{"domains/MTA-STS mode: testing until set, per account", testDomainsMTASTSMode},
	{"domains/checks, rotation and signing keys", testDomainsChecksAndKeys},
	{"domains/due checks are leased to one claimer", testDomainsClaims},
	{"domains/delete, inboxes on a domain, and cascade with the account", testDomainsDelete},
	{"suppressions/add, refresh, list in scope, find among, delete", testSuppressions},
	{"mail/verdicts, recipients, bounce tokens and reports", testMailVerdictsAndRecipients},
	{"sources/save, replace, list, progress only for the current settings, delete", testSources},
	{"sources/passwords are sealed values, and go with their account", testSourcesSealedAndCascade},
	{"sources/each is leased to one owner at a time, renewed, taken over once the lease runs out", testSourceLeases},
	{"certificates/entries are stored, replaced, deleted and sealed values", testCertificateEntries},
	{"certificates/a name is leased to one holder at a time, renewed, released, taken over once it runs out", testCertificateLeases},
	{"mail/mailbox entries list one inbox and direction by id", testMailboxEntries},
	{"mail/sources read back byte for byte, sized as received, whatever they hold", testMailSources},
	{"mail/labels: added and removed once, shown everywhere, bounded, gone with their message", testMailLabels},
	{"mail/label filters of messages and threads", testMailLabelFilters},
	{"phones/one per identity, one identity per number", testPhonesUnique},
	{"phones/an identity and its number are stored together or not at all", testPhonesWithIdentity},
	{"sms/conversations, read state, dedupe by provider id", testSMSConversations},
	{"sms/status reports move forward only; a message that never left is removed", testSMSStatusAndRemoval},
	{"sms/a new sender is recorded as a contact once", testSMSCorrespondent},
	{"voice agents save and replace", testVoiceAgents},
	{"calls/saved once per provider id, reports move forward only, listed in scope, simulated hang-ups", testCalls},
	{"calls/media token claimed once, stream and recording kept, first end reason stands, active calls and sends", testCallStreams},
	{"verifications/stored with mail and texts, listed newest first with filters", testVerifications},
	{"device grants/create and find by either code", testDeviceGrantsCreateAndFind},
	{"device grants/polls, one answer, one redemption", testDeviceGrantsOneAnswerOneRedemption},
	{"device grants/pending or denied grants are not redeemed", testDeviceGrantsRedeemOnlyApproved},
	{"device grants/a management key has no identity", testDeviceGrantsManagementKey},
	{"device grants/expired grants are forgotten, and go with their account", testDeviceGrantsExpire},
	{"refresh families/rotate, a reuse revokes, expired ones are forgotten and go with their account", testRefreshFamilies},
	{"lists/every growing list pages in the store, counted when asked", testListsPage},
	{"mail/deleting a message recounts its thread, and the last one takes it", testMailDeleteRecountsThread},
	{"sms/deleting a message recounts its conversation, and the last one takes it", testSMSDeleteRecountsConversation},
	{"identities/delete takes everything the identity owns, and nothing else", testIdentitiesDeleteCascades},
	{"inboxes/delete takes the inbox's mail; an identity keeps its last inbox", testInboxesDelete},
	{"idempotency/claim, busy, mismatch, replay, lease, expiry, purge", testIdempotencyKeys},
	{"idempotency/effects are recorded with the key, and refused once it is taken over", testIdempotencyEffects},
	{"events/every change writes its events in its transaction, numbered per account", testEventsWrittenWithChanges},
	{"events/cursor, types, prefixes, identity scope, limit and the last event", testEventsFilters},
	{"events/a reader polling after its last id misses nothing while writers commit", testEventsCursorExact},
	{"events/pruning deletes expired prefixes and says where each log starts", testEventsPrune},
	{"events/a commit that wrote events signals the reader", testEventsSignal},
	{"webhooks/deliveries written with events, leased, attempted, retried, deleted", testWebhookDeliveries},
	{"rules/an identity's and its account's, scoped, and gone with their identity", testRules},
	{"drafts/kept, listed, changed, sent once with their message, and gone with their identity", testDrafts},
	{"mail/blocked mail is kept out of lists, threads and mailboxes", testBlockedMail},
	{"mail/spam is kept out of lists, threads and the INBOX view, and moves", testSpam},
}

// t0 is the suite's epoch, with microseconds to catch lost precision.
var t0 = time.Date(2026, 11, 21, 8, 0, 0, 123456000, time.UTC)

// fixture builds rows for a test with little ceremony.
type fixture struct {
	t   *testing.T
	s   ports.Store
	ctx context.Context
	now time.Time
}

// tick moves the fixture's clock one second and returns it.
func (f *fixture) tick() time.Time {
	f.now = f.now.Add(time.Second)
	return f.now
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) account() core.Account {
	f.t.Helper()
	a := core.Account{ID: uuid.NewString(), Email: uuid.NewString()[:8] + "@example.com", SubscriptionActive: true, CreatedAt: f.tick()}
	f.must(f.s.CreateAccount(f.ctx, a))
	return a
}

// identity creates an identity with its first inbox.
func (f *fixture) identity(accountID string) (core.Identity, core.Inbox) {
	f.t.Helper()
	now := f.tick()
	id := core.Identity{ID: uuid.NewString(), AccountID: accountID, Name: "agent-" + uuid.NewString()[:8], CreatedAt: now, UpdatedAt: now}
	in := core.Inbox{UUID: uuid.NewString(), AccountID: accountID, IdentityID: id.ID, Email: id.Name + "@agents.test", CreatedAt: now}
	var err error
	in.ID, err = f.s.CreateIdentity(f.ctx, id, in, nil)
	f.must(err)
	id.Inbox = in.Email
	return id, in
}

// wantKind fails unless err is a core error of kind k.
func wantKind(t *testing.T, err error, k core.Kind) {
	t.Helper()
	if got := core.KindOf(err); got != k || err == nil {
		t.Fatalf("want error kind %d, got %v (kind %d)", k, err, got)
	}
}

// wantConflictOn fails unless err is a Conflict naming field.
func wantConflictOn(t *testing.T, err error, field string) {
	t.Helper()
	wantKind(t, err, core.KindConflict)
	if e := err.(*core.Error); len(e.Fields[field]) == 0 {
		t.Fatalf("conflict should name %q: %+v", field, e.Fields)
	}
}
