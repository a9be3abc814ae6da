package core

import (
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// PhoneNumber is a number provisioned for an identity.
type PhoneNumber struct {
	ID           int64
	AccountID    string
	IdentityID   string
	Number       string // E.164
	CountryCode  string // ISO 3166-1 alpha-2
	Capabilities Capabilities
	Provider     string // "twilio", "telnyx", "sim"
	ProviderSID  string
	CreatedAt    time.Time
}

// Capabilities says what a number can do.
type Capabilities struct {
	SMS   bool `json:"sms"`
	Voice bool `json:"voice"`
	MMS   bool `json:"mms"`
}

// SMSStatus is where an SMS is: the provider's states plus "received".
type SMSStatus string

const (
	SMSQueued      SMSStatus = "queued"
	SMSSent        SMSStatus = "sent"
	SMSDelivered   SMSStatus = "delivered"
	SMSFailed      SMSStatus = "failed"
	SMSUndelivered SMSStatus = "undelivered"
	SMSReceived    SMSStatus = "received"
)

// ParseSMSStatus maps a provider's status word onto ours, Twilio's and
// Telnyx's (their words do not clash); the intermediate states
// ("accepted", "sending", "scheduled") count as queued or sent. Telnyx's
// delivery_unconfirmed stays sent: the carrier never said.
func ParseSMSStatus(s string) (SMSStatus, bool) {
	switch strings.ToLower(s) {
	case "queued", "accepted", "scheduled":
		return SMSQueued, true
	case "sending", "sent", "delivery_unconfirmed":
		return SMSSent, true
	case "delivered", "read":
		return SMSDelivered, true
	case "failed", "canceled", "sending_failed", "gw_timeout":
		return SMSFailed, true
	case "undelivered", "delivery_failed", "expired", "dlr_timeout":
		return SMSUndelivered, true
	case "received", "receiving":
		return SMSReceived, true
	}
	return "", false
}

// SMSStatusFollows reports whether a report of next may replace current:
// statuses move forward only (queued, then sent, then one final state), so
// a late or repeated callback cannot move a message back, and a final state
// (delivered, failed, undelivered, received) is never left: Twilio may send
// "undelivered" after "delivered", and the first word stands.
func SMSStatusFollows(current, next SMSStatus) bool {
	progress := func(s SMSStatus) int {
		switch s {
		case SMSQueued:
			return 0
		case SMSSent:
			return 1
		default:
			return 2
		}
	}
	if progress(current) == 2 {
		return false
	}
	return progress(next) >= progress(current)
}

// MaxSMSMedia bounds the media kept with one message; Twilio sends at most 10.
const MaxSMSMedia = 10

// SMSMedia is a file an MMS carried: where the provider keeps it, and its type.
type SMSMedia struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
}

// KeptSMSMedia is what is kept of the media a provider reports: at most
// MaxSMSMedia entries with an absolute http(s) URL of up to 2,048
// characters; a content type that is missing or too long reads as
// application/octet-stream.
func KeptSMSMedia(media []SMSMedia) []SMSMedia {
	var kept []SMSMedia
	for _, m := range media {
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(m.URL) > 2048 {
			continue
		}
		if m.ContentType = strings.TrimSpace(m.ContentType); m.ContentType == "" || len(m.ContentType) > 255 || HasLineBreak(m.ContentType) {
			m.ContentType = "application/octet-stream"
		}
		if kept = append(kept, m); len(kept) == MaxSMSMedia {
			break
		}
	}
	return kept
}

// SMSMessage is one text message, sent or received.
type SMSMessage struct {
	ID          int64
	AccountID   string
	IdentityID  string
	PhoneID     int64
	PhoneNumber string // our number
	FromNumber  string
	ToNumber    string
	Body        string
	Direction   Direction
	IsRead      bool
	Status      SMSStatus
	Error       string
	ProviderSID string
	Media       []SMSMedia // an MMS's files, kept at the provider
	// Verification is the code or link a received text carries
	// (FindVerification, at receipt); nil for none.
	Verification *Verification
	// Blocked marks a text from a sender an inbound rule refuses: the
	// provider delivered it, so it is stored, but kept out of lists and
	// conversations, and not announced.
	Blocked   bool
	CreatedAt time.Time
	// Highlights are a search hit's snippets (Highlights); nil outside a search.
	Highlights []string
}

// Counterpart is the other party's number.
func (m SMSMessage) Counterpart() string {
	if m.Direction == Incoming {
		return m.FromNumber
	}
	return m.ToNumber
}

// ConversationID is spec §2's "{phone_id}_{from_number}".
func ConversationID(phoneID int64, counterpart string) string {
	return strconv.FormatInt(phoneID, 10) + "_" + counterpart
}

// ParseConversationID splits a conversation id; ok is false for any other shape.
func ParseConversationID(id string) (phoneID int64, counterpart string, ok bool) {
	head, tail, found := strings.Cut(id, "_")
	if !found || !IsE164(tail) {
		return 0, "", false
	}
	n, err := strconv.ParseInt(head, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != head {
		return 0, "", false
	}
	return n, tail, true
}

// Conversation is the summary of the messages between our number and one counterpart.
type Conversation struct {
	ID          string
	AccountID   string
	IdentityID  string
	PhoneID     int64
	PhoneNumber string
	Counterpart string
	Summary
}

// MaxSMSBodyLength is the longest body we send: ten concatenated segments.
const MaxSMSBodyLength = 1600

// MaxStoredSMSBody bounds, in bytes, the body of a received text that is
// stored: a provider sends at most MaxSMSBodyLength characters, so only a
// forged or simulated text is ever cut, and a list of texts stays small.
const MaxStoredSMSBody = 4 * MaxSMSBodyLength

// StoredSMSBody is body cut to MaxStoredSMSBody bytes at a character boundary.
func StoredSMSBody(body string) string { return cutUTF8(body, MaxStoredSMSBody) }

// ValidateSMS checks a message an identity wants to send.
func ValidateSMS(to, body string) error {
	var p Problems
	if !IsE164(to) {
		p.Add("to", E164Hint)
	}
	switch n := utf8.RuneCountInString(body); {
	case strings.TrimSpace(body) == "":
		p.Add("body", "This field may not be blank.")
	case n > MaxSMSBodyLength:
		p.Add("body", "Ensure this field has no more than %d characters.", MaxSMSBodyLength)
	}
	return p.Err()
}

// IsCountryCode reports whether s looks like an ISO 3166-1 alpha-2 code.
// Which countries a provider serves is the provider's answer to give.
func IsCountryCode(s string) bool {
	return len(s) == 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z'
}

// VoiceAgent is where live calls to an identity's number are sent.
type VoiceAgent struct {
	IdentityID  string
	AccountID   string
	ResponseURL string
	Method      string // POST or GET
	Enabled     bool
	Mode        VoiceMode
	StreamURL   string // ws or wss: the agent's Media Streams WebSocket
	RecordCalls bool
	// StreamSecret signs our upgrade requests to StreamURL (Standard
	// Webhooks). Stores never see it: they keep SealedStreamSecret, which
	// the app seals and opens with the vault cipher.
	StreamSecret       string
	SealedStreamSecret []byte
	UpdatedAt          time.Time
}

// StartConversation is the empty conversation m starts; Add folds m in.
func StartConversation(m SMSMessage) Conversation {
	return Conversation{ID: ConversationID(m.PhoneID, m.Counterpart()), AccountID: m.AccountID, IdentityID: m.IdentityID,
		PhoneID: m.PhoneID, PhoneNumber: m.PhoneNumber, Counterpart: m.Counterpart()}
}

// SummarizeConversation is the summary of a conversation's messages, given
// oldest first (by creation time, then id); at least one is needed. It is
// how a conversation is counted again after a message leaves it.
func SummarizeConversation(msgs []SMSMessage) Conversation {
	c := StartConversation(msgs[0])
	for _, m := range msgs {
		c.Add(m)
	}
	return c
}

// Add folds a newly stored message into the conversation's summary.
func (c *Conversation) Add(m SMSMessage) {
	if !m.Blocked { // blocked texts are no part of a conversation's summary
		c.Summary.add(m.Direction, m.IsRead, m.CreatedAt, m.Body)
	}
}

// CallStatus is where a call is, in Twilio's words.
type CallStatus string

const (
	CallQueued     CallStatus = "queued" // placed by us, not yet ringing
	CallRinging    CallStatus = "ringing"
	CallInProgress CallStatus = "in-progress"
	CallDone       CallStatus = "completed"
	CallBusy       CallStatus = "busy"
	CallNoAnswer   CallStatus = "no-answer"
	CallFailed     CallStatus = "failed"
	CallCanceled   CallStatus = "canceled"
)

// ParseCallStatus maps a provider's call status onto ours; Twilio's
// "queued" and "initiated" count as ringing.
func ParseCallStatus(s string) (CallStatus, bool) {
	switch st := CallStatus(strings.ToLower(s)); st {
	case "queued", "initiated":
		return CallRinging, true
	case CallRinging, CallInProgress, CallDone, CallBusy, CallNoAnswer, CallFailed, CallCanceled:
		return st, true
	}
	return "", false
}

// Ended reports whether the call is over (every status but queued,
// ringing and in-progress).
func (s CallStatus) Ended() bool { return s != CallQueued && s != CallRinging && s != CallInProgress }

// CallStatusFollows reports whether a report of next may replace current:
// queued, ringing, then in-progress, then one final status that is never
// left, so a late or repeated callback cannot move a call back.
func CallStatusFollows(current, next CallStatus) bool {
	progress := func(s CallStatus) int {
		switch {
		case s == CallQueued:
			return 0
		case s == CallRinging:
			return 1
		case s == CallInProgress:
			return 2
		default:
			return 3
		}
	}
	return !current.Ended() && progress(next) > progress(current)
}

// Call is a phone call to (or from) an identity's number.
type Call struct {
	ID          int64
	AccountID   string
	IdentityID  string
	PhoneID     int64
	PhoneNumber string // our number
	Direction   Direction
	FromNumber  string
	ToNumber    string
	Status      CallStatus
	StartedAt   time.Time
	EndedAt     time.Time // zero while the call lasts
	// DurationSeconds is the provider's count once the call ended, -1 before.
	DurationSeconds int
	ProviderSID     string
	// HangUpAt is when the simulator ends a call it placed (zero for a
	// provider's calls): kept with the call, so a restart still ends it.
	HangUpAt time.Time
	// Mode is how the call reached its agent; "" for a call that reached none.
	Mode VoiceMode
	// AgentURL is where the call's agent is: its stream_url or response_url.
	AgentURL string
	// Record keeps the bridged audio; RecordingBytes is its size once kept.
	Record         bool
	RecordingBytes int64
	// Stream is what the media bridge counted; nil until the agent connected.
	Stream    *CallStream
	EndReason EndReason
	// MediaTokenHash is MediaTokenHash of the one-time token in the call's
	// media URL; "" once the provider used it (or for a call with none).
	MediaTokenHash string
}

// NoteEndReason records why the call ended, unless a reason is known
// already: the first word stands (a hang-up asked through the API stays
// hangup_api when the provider then reports completed).
func (c *Call) NoteEndReason(r EndReason) bool {
	if c.EndReason != "" {
		return false
	}
	c.EndReason = r
	return true
}

// Active reports whether the call counts toward the active calls.
func (c Call) Active() bool { return !c.Status.Ended() }

// CallReport is a provider's word that a call moved.
type CallReport struct {
	ProviderSID string
	Status      CallStatus
	At          time.Time
	// DurationSeconds is the provider's count for an ended call, -1 when
	// it gave none (then it is counted from the call's start).
	DurationSeconds int
}

// Apply moves c as the report says, and reports whether it moved
// (CallStatusFollows): an ended call gets its end time and duration.
func (r CallReport) Apply(c *Call) bool {
	if !CallStatusFollows(c.Status, r.Status) {
		return false
	}
	c.Status = r.Status
	if r.Status.Ended() {
		c.EndReason = EndReasonOf(*c)
		c.EndedAt = r.At
		c.DurationSeconds = r.DurationSeconds
		if c.DurationSeconds < 0 {
			c.DurationSeconds = max(0, int(r.At.Sub(c.StartedAt).Round(time.Second)/time.Second))
		}
	}
	return true
}
