package core

import (
	"strconv"
	"strings"
	"time"
)

// EventType names what happened: "email.received", "sms.status", …
type EventType string

// The event types. Each is written by the store in the transaction of the
// change it tells (an event exists if and only if its change committed).
const (
	EmailReceived    EventType = "email.received"
	EmailSent        EventType = "email.sent"
	EmailFailed      EventType = "email.failed"
	EmailBounced     EventType = "email.bounced"
	EmailDelivered   EventType = "email.delivered"
	EmailComplained  EventType = "email.complained"
	EmailLabeled     EventType = "email.labeled"
	EmailUnlabeled   EventType = "email.unlabeled"
	EmailSpam        EventType = "email.spam"
	SMSReceivedEvent EventType = "sms.received"
	SMSSentEvent     EventType = "sms.sent"
	SMSStatusEvent   EventType = "sms.status"
	CallReceived     EventType = "call.received"
	CallStarted      EventType = "call.started"
	CallCompleted    EventType = "call.completed"
	IdentityCreated  EventType = "identity.created"
	IdentityDeleted  EventType = "identity.deleted"
	InboxCreated     EventType = "inbox.created"
	PhoneProvisioned EventType = "phone.provisioned"
	PhoneReleased    EventType = "phone.released"
	WebhookTest      EventType = "webhook.test" // sent only to the endpoint being tested, never logged
)

// EventTypes lists every type a filter may name, in the order the API documents them.
var EventTypes = []EventType{EmailReceived, EmailSent, EmailFailed, EmailBounced, EmailDelivered, EmailComplained, EmailLabeled, EmailUnlabeled,
	EmailSpam, SMSReceivedEvent, SMSSentEvent, SMSStatusEvent, CallReceived, CallStarted, CallCompleted, IdentityCreated, IdentityDeleted,
	InboxCreated, PhoneProvisioned, PhoneReleased, WebhookTest}

// Event is one entry of an account's event log.
type Event struct {
	// Seq is the event's id: strictly increasing per account in commit
	// order, so "after Seq" is an exact cursor (the API shows it as a
	// decimal string).
	Seq        int64
	AccountID  string
	IdentityID string // "" for an event of no identity
	Type       EventType
	CreatedAt  time.Time
	// Data is the JSON object the API shows as the event's data, rendered
	// once when the event is written.
	Data []byte
	// Name is the id of an event outside the log (webhook.test), which has
	// no sequence number.
	Name string
}

// ID is the event's id as the API shows it.
func (e Event) ID() string {
	if e.Name != "" {
		return e.Name
	}
	return strconv.FormatInt(e.Seq, 10)
}

// ParseEventID reads an event id given back as a cursor.
func ParseEventID(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

// NewEvent is an event on its way into the log: the store gives it its
// sequence number and time, and renders Subject (the core value it is
// about: an EmailMessage, Report, Labeling, SMSMessage, Identity, Inbox, PhoneNumber
// or Call) into Data through its ports.EventEncoder.
type NewEvent struct {
	AccountID  string
	IdentityID string
	Type       EventType
	Subject    any
}

// MailEvent is the event a stored message makes: received mail (from
// SMTP, a local delivery or an IMAP source) is email.received; a message
// being sent makes none until its delivery ends (DeliveryEvent), and
// blocked mail none at all (it is not announced). Mail filed as spam is
// email.spam, which a wait for new mail does not see.
func MailEvent(m EmailMessage) (NewEvent, bool) {
	if m.Direction != Incoming || m.Blocked {
		return NewEvent{}, false
	}
	t := EmailReceived
	if m.IsSpam {
		t = EmailSpam
	}
	return NewEvent{AccountID: m.AccountID, IdentityID: m.IdentityID, Type: t, Subject: m}, true
}

// DeliveryEvent is the event an outgoing message's final delivery status
// makes: email.sent when the relay or a local delivery accepted it,
// email.failed when a recipient failed for good (the message's recipients
// carry each address and reply).
func DeliveryEvent(m EmailMessage) (NewEvent, bool) {
	var t EventType
	switch m.DeliveryStatus {
	case DeliverySent:
		t = EmailSent
	case DeliveryFailed:
		t = EmailFailed
	default:
		return NewEvent{}, false
	}
	return NewEvent{AccountID: m.AccountID, IdentityID: m.IdentityID, Type: t, Subject: m}, true
}

// Report is what a report said of a message we sent: the recipients it
// bounced, found delivered or complained of (one kind per event), each
// with the report's status and reason.
type Report struct {
	Message    EmailMessage
	Recipients []DSNRecipient
}

// ReportEvents are the events of the lines a report applied to m
// (ApplyReport): email.bounced for the recipients it bounced,
// email.delivered for those it found delivered, email.complained for
// complaints; one event per kind.
func ReportEvents(m EmailMessage, applied []DSNRecipient) []NewEvent {
	kinds := []struct {
		outcome DeliveryOutcome
		event   EventType
	}{{OutcomeBounced, EmailBounced}, {OutcomeDelivered, EmailDelivered}, {OutcomeComplained, EmailComplained}}
	var events []NewEvent
	for _, k := range kinds {
		var lines []DSNRecipient
		for _, r := range applied {
			if r.Outcome() == k.outcome {
				lines = append(lines, r)
			}
		}
		if len(lines) > 0 {
			events = append(events, NewEvent{AccountID: m.AccountID, IdentityID: m.IdentityID, Type: k.event, Subject: Report{Message: m, Recipients: lines}})
		}
	}
	return events
}

// SMSEvent is the event a newly stored text makes: sms.received for one
// that arrived; one being sent makes sms.sent once the provider took it
// (SMSSentEvent, by SetSMSProvider) and sms.status as reports move it. A
// blocked text makes none (it is not announced).
func SMSEvent(m SMSMessage) (NewEvent, bool) {
	if m.Direction != Incoming || m.Blocked {
		return NewEvent{}, false
	}
	return NewEvent{AccountID: m.AccountID, IdentityID: m.IdentityID, Type: SMSReceivedEvent, Subject: m}, true
}

// SMSProviderEvent is the event of a text the provider has taken (or
// refused at once): sms.sent, or sms.status for a refusal.
func SMSProviderEvent(m SMSMessage) NewEvent {
	t := SMSSentEvent
	if m.Status == SMSFailed || m.Status == SMSUndelivered {
		t = SMSStatusEvent
	}
	return NewEvent{AccountID: m.AccountID, IdentityID: m.IdentityID, Type: t, Subject: m}
}

// EventFilter selects events of one account.
type EventFilter struct {
	Scope Scope
	// After is the cursor: only events with a greater Seq.
	After int64
	// Newest lists newest first (a person looking back); Before, when not
	// 0, is its cursor: only events with a smaller Seq.
	Newest bool
	Before int64
	// Types, when set, keeps events whose type one of them names
	// (EventTypeMatches).
	Types []string
	Limit int
}

// Keeps reports whether the filter keeps e (its scope, cursor and types).
func (f EventFilter) Keeps(e Event) bool {
	if !f.Scope.Allows(e.AccountID, e.IdentityID) || e.Seq <= f.After || f.Before > 0 && e.Seq >= f.Before {
		return false
	}
	if len(f.Types) == 0 {
		return true
	}
	for _, p := range f.Types {
		if EventTypeMatches(p, e.Type) {
			return true
		}
	}
	return false
}

// EventTypeMatches reports whether a filter's pattern names t: the type
// itself, or a prefix ending in ".*" ("email.*").
func EventTypeMatches(pattern string, t EventType) bool {
	if prefix, ok := EventTypePrefix(pattern); ok {
		return strings.HasPrefix(string(t), prefix)
	}
	return pattern == string(t)
}

// EventTypePrefix is the prefix a pattern of the "email.*" form names
// ("email."), and whether it is of that form; any other pattern names one
// type exactly.
func EventTypePrefix(pattern string) (string, bool) {
	prefix, ok := strings.CutSuffix(pattern, "*")
	return prefix, ok && strings.HasSuffix(prefix, ".")
}

// ValidEventPattern reports whether a filter's pattern names at least one
// known type ("email.*", "sms.status").
func ValidEventPattern(pattern string) bool {
	for _, t := range EventTypes {
		if t != WebhookTest && EventTypeMatches(pattern, t) {
			return true
		}
	}
	return false
}

// EventRetention is how long events are kept unless configured
// (CALLSIGN_EVENT_RETENTION).
const EventRetention = 720 * time.Hour

// IdentityEvent is identity.created or identity.deleted.
func IdentityEvent(t EventType, i Identity) NewEvent {
	return NewEvent{AccountID: i.AccountID, IdentityID: i.ID, Type: t, Subject: i}
}

// InboxEvent is inbox.created.
func InboxEvent(in Inbox) NewEvent {
	return NewEvent{AccountID: in.AccountID, IdentityID: in.IdentityID, Type: InboxCreated, Subject: in}
}

// PhoneEvent is phone.provisioned or phone.released.
func PhoneEvent(t EventType, p PhoneNumber) NewEvent {
	return NewEvent{AccountID: p.AccountID, IdentityID: p.IdentityID, Type: t, Subject: p}
}

// SMSReportEvent is sms.status: a provider's report moved a text.
func SMSReportEvent(m SMSMessage) NewEvent {
	return NewEvent{AccountID: m.AccountID, IdentityID: m.IdentityID, Type: SMSStatusEvent, Subject: m}
}

// CallReceivedEvent is call.received: a call reached an identity's number.
func CallReceivedEvent(c Call) NewEvent {
	return NewEvent{AccountID: c.AccountID, IdentityID: c.IdentityID, Type: CallReceived, Subject: c}
}

// CallEndedEvent is call.completed, made when a report ended the call
// (whatever its final status: completed, busy, no-answer, failed, canceled)
// and its bridge, if the agent was connected, has ended too: the event
// carries the bridge's final counts, whichever of the two ends came last.
func CallEndedEvent(c Call) (NewEvent, bool) {
	if !c.Status.Ended() || c.Stream != nil && c.Stream.EndedAt.IsZero() {
		return NewEvent{}, false
	}
	return NewEvent{AccountID: c.AccountID, IdentityID: c.IdentityID, Type: CallCompleted, Subject: c}, true
}

// StreamEndedEvent puts a bridge's final counts on c (no stream when st
// has no ConnectedAt: the agent never got start) and is the call's
// call.completed when the call ended while the bridge ran: the provider's
// report held the event back for these counts.
func StreamEndedEvent(c *Call, st CallStream) (NewEvent, bool) {
	held := c.Stream != nil && c.Stream.EndedAt.IsZero() && c.Status.Ended()
	c.Stream = nil
	if !st.ConnectedAt.IsZero() {
		if st.EndedAt.IsZero() {
			st.EndedAt = st.ConnectedAt // ended, at the latest now
		}
		c.Stream = &st
	}
	if !held {
		return NewEvent{}, false
	}
	return CallEndedEvent(*c)
}

// SpamMoveEvent is the event of a received message the person moved
// (EmailMessage.IsSpam flipped from wasSpam): out of spam it is
// email.received, as if it had just arrived, so that whoever waits for
// mail (or a code) sees it; into spam it makes none (it was announced).
func SpamMoveEvent(m EmailMessage, wasSpam bool) (NewEvent, bool) {
	if !wasSpam || m.IsSpam {
		return NewEvent{}, false
	}
	return MailEvent(m)
}
