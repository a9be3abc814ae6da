package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// NewSMS is a text message to store, with the contact to record for a new
// sender.
type NewSMS struct {
	Message       core.SMSMessage
	Correspondent *core.Contact
}

// SMSFilter narrows the SMS list. Empty fields do not filter.
type SMSFilter struct {
	Scope       core.Scope
	Direction   core.Direction
	IsRead      *bool
	PhoneID     int64
	Counterpart string
	// Oldest lists oldest first (a conversation); the default is newest first.
	Oldest bool
	// IncludeBlocked keeps blocked texts, which lists leave out.
	IncludeBlocked bool
	// Search, when set, keeps the texts the query matches (its words in
	// the body, from: and to: in the numbers), most relevant first, each
	// with its Highlights; see MessageFilter.Search.
	Search *core.SearchQuery
	Page   Page
}

// ConversationFilter narrows the conversation summaries.
// Conversations holding only blocked texts (no message counted) are left out.
type ConversationFilter struct {
	Scope     core.Scope
	HasUnread *bool
	PhoneID   int64
	Page      Page
}

// PhoneStore keeps phone numbers and voice-agent settings.
type PhoneStore interface {
	// CreatePhone stores a provisioned number and sets its identity's
	// updated time to the number's creation time, in one transaction; an
	// identity has at most one (a clash on "identity_id"), a number belongs
	// to one identity ("number").
	CreatePhone(ctx context.Context, p core.PhoneNumber) (int64, error)
	Phone(ctx context.Context, accountID string, id int64) (core.PhoneNumber, error)
	// PhoneByNumber finds a number across accounts, for provider webhooks.
	PhoneByNumber(ctx context.Context, number string) (core.PhoneNumber, error)
	PhoneOfIdentity(ctx context.Context, accountID, identityID string) (core.PhoneNumber, error)
	// Phones lists numbers in scope, oldest first.
	Phones(ctx context.Context, scope core.Scope, page Page) ([]core.PhoneNumber, int, error)

	// VoiceAgent is an identity's setting, NotFound when never saved.
	VoiceAgent(ctx context.Context, accountID, identityID string) (core.VoiceAgent, error)
	SaveVoiceAgent(ctx context.Context, v core.VoiceAgent) error
}

// SMSStore keeps text messages and their conversations.
type SMSStore interface {
	// SaveSMS stores a message and updates its conversation in one
	// transaction. A message whose ProviderSID is already stored is not
	// stored again: the stored one comes back with created false.
	SaveSMS(ctx context.Context, m NewSMS) (stored core.SMSMessage, created bool, err error)
	SMS(ctx context.Context, accountID string, id int64) (core.SMSMessage, error)
	SMSList(ctx context.Context, f SMSFilter) ([]core.SMSMessage, int, error)
	// SetSMSRead marks a message read or unread and moves its
	// conversation's unread count by core.UnreadDelta.
	SetSMSRead(ctx context.Context, accountID string, id int64, read bool) error
	// UpdateSMSStatus records a provider's delivery report when
	// core.SMSStatusFollows lets it move the message. It reports whether a
	// message has that SID.
	UpdateSMSStatus(ctx context.Context, providerSID string, status core.SMSStatus, errText string) (bool, error)
	// SetSMSProvider records the provider's id and status of a message just sent.
	SetSMSProvider(ctx context.Context, id int64, providerSID string, status core.SMSStatus) error
	// DeleteSMS removes a message and counts its conversation again from
	// what is left (core.Conversation.Add, oldest first), in one
	// transaction; a conversation left empty goes too.
	DeleteSMS(ctx context.Context, accountID string, id int64) error

	// Conversations lists summaries, latest activity first.
	Conversations(ctx context.Context, f ConversationFilter) ([]core.Conversation, int, error)
	Conversation(ctx context.Context, accountID string, phoneID int64, counterpart string) (core.Conversation, error)
}

// CallFilter narrows the call list. Empty fields do not filter.
type CallFilter struct {
	Scope core.Scope
	// StartedAfter keeps calls started after it (exclusive).
	StartedAfter *time.Time
	Page         Page
}

// CallStore keeps call records.
type CallStore interface {
	// SaveCall stores a call that reached one of our numbers and writes
	// call.received, in one transaction. A call whose ProviderSID is
	// already stored is not stored again: the stored one comes back with
	// created false.
	SaveCall(ctx context.Context, c core.Call) (stored core.Call, created bool, err error)
	// ReportCall applies a provider's report to the call with its SID
	// (core.CallReport.Apply, under the call's lock) and writes
	// call.completed when it ended the call, unless the call's bridge is
	// running (core.CallEndedEvent): StreamEnded writes it then. It reports
	// whether a call has that SID.
	ReportCall(ctx context.Context, r core.CallReport) (bool, error)
	Call(ctx context.Context, accountID string, id int64) (core.Call, error)
	// Calls lists calls in scope, newest first.
	Calls(ctx context.Context, f CallFilter) ([]core.Call, int, error)
	// SetCallProvider records the provider's id of a call we placed.
	SetCallProvider(ctx context.Context, id int64, providerSID string) error
	// ClaimMediaToken finds the call whose media token has hash and
	// clears the token in the same statement, so it opens one stream
	// only; NotFound when no call has it (unknown, or used).
	ClaimMediaToken(ctx context.Context, hash string) (core.Call, error)
	// StreamConnected records when the agent was connected to the call
	// and writes call.started, in one transaction; NotFound when the call
	// has ended.
	StreamConnected(ctx context.Context, id int64, at time.Time) error
	// StreamEnded records what the bridge counted and when it ended (as
	// core.StreamEndedEvent puts them on the call), the end reason (as
	// core.Call.NoteEndReason lets it) and, when not nil, the recording
	// (its stored bytes counted in the storage quota), in one transaction;
	// with call.completed when ReportCall held it back for these counts.
	StreamEnded(ctx context.Context, id int64, s core.CallStream, reason core.EndReason, recording []byte) error
	// EndStaleStreams ends the bridges of up to 100 calls that ended
	// before endedBefore while their bridge never reported (its instance
	// stopped): each, in a transaction of its own, keeps the counts known
	// and gets its held call.completed. It returns how many it ended.
	EndStaleStreams(ctx context.Context, endedBefore time.Time) (int, error)
	// NoteEndReason records why a call ended, as core.Call.NoteEndReason lets it.
	NoteEndReason(ctx context.Context, id int64, reason core.EndReason) error
	// ActiveCalls counts the account's calls that have not ended.
	ActiveCalls(ctx context.Context, accountID string) (int64, error)
	// CallRecording is a call's recording, NotFound when it has none.
	CallRecording(ctx context.Context, accountID string, id int64) ([]byte, error)
	// SimulatedHangUps lists up to 100 calls that have not ended and whose
	// HangUpAt is not after now, oldest first, and the earliest HangUpAt after now
	// (zero when there is none).
	SimulatedHangUps(ctx context.Context, now time.Time) (due []core.Call, next time.Time, err error)
}
