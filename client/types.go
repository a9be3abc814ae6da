package client

// The API's objects, field for field as docs/api.md describes them. Times
// are the API's RFC 3339 strings, passed on as they came.

// Whoami is GET /api/health/whoami/: who the key is.
type Whoami struct {
	Account   string  `json:"account"`
	KeyType   string  `json:"key_type"`
	Identity  *string `json:"identity"`
	KeyPrefix string  `json:"key_prefix"`
	CanSend   bool    `json:"can_send"`
	// Usage and Quotas are the account's, by the same names (storage,
	// identities, inboxes, phones, vault_items, sends_per_hour); a nil
	// quota is unlimited.
	Usage  map[string]int64  `json:"usage"`
	Quotas map[string]*int64 `json:"quotas"`
}

// Identity is an agent persona with its inbox and phone number.
type Identity struct {
	UUID      string  `json:"uuid"`
	Name      string  `json:"name"`
	Inbox     string  `json:"inbox"`
	Phone     *string `json:"phone"`
	CreatedDT string  `json:"created_dt"`
	UpdatedDT string  `json:"updated_dt"`
}

// Inbox is one email address of an identity.
type Inbox struct {
	ID        int64  `json:"id"`
	UUID      string `json:"uuid"`
	Email     string `json:"email"`
	Identity  string `json:"identity"`
	CreatedDT string `json:"created_dt"`
}

// MessageSummary is an email message as lists show it (Messages, a
// ThreadDetail): a preview in place of the bodies. Message reads them.
type MessageSummary struct {
	ID              int64           `json:"id"`
	URL             string          `json:"url"`
	Inbox           int64           `json:"inbox"`
	ThreadID        string          `json:"thread_id"`
	MessageID       string          `json:"message_id"`
	InReplyTo       *string         `json:"in_reply_to"`
	FromEmail       string          `json:"from_email"`
	FromDisplayName *string         `json:"from_display_name"`
	ToEmail         string          `json:"to_email"`
	Cc              []string        `json:"cc"`
	Bcc             []string        `json:"bcc"`
	Subject         string          `json:"subject"`
	Preview         string          `json:"preview"`
	Truncated       bool            `json:"truncated"` // the stored bodies hold only the start of what was sent
	Direction       string          `json:"direction"`
	IsRead          bool            `json:"is_read"`
	Attachments     []Attachment    `json:"attachments"`
	DeliveryStatus  *string         `json:"delivery_status"`
	DeliveryError   *string         `json:"delivery_error"`
	Recipients      []Recipient     `json:"recipients"`
	Authentication  *Authentication `json:"authentication"`
	Verification    *Verification   `json:"verification"`
	Labels          []string        `json:"labels"`
	Highlights      []string        `json:"highlights"`
	Blocked         bool            `json:"blocked"` // an inbound rule refused it after it was accepted
	Spam            *SpamVerdict    `json:"spam"`    // rspamd's verdict; nil when none was asked for or it did not answer
	IsSpam          bool            `json:"is_spam"` // filed as spam: out of lists unless include_spam=true
	CreatedDT       string          `json:"created_dt"`
}

// SpamVerdict is rspamd's verdict on a received message.
type SpamVerdict struct {
	Score   float64 `json:"score"`
	Action  string  `json:"action"` // "no action", "add header", "rewrite subject", …
	Symbols []struct {
		Name  string  `json:"name"`
		Score float64 `json:"score"`
	} `json:"symbols"`
}

// Message is an email message with its bodies.
type Message struct {
	MessageSummary
	Content string `json:"content"`
	HTML    string `json:"html"`
	// ExtractedText and ExtractedHTML are the bodies without the quoted
	// history and a marked signature: the new content of a reply.
	ExtractedText string `json:"extracted_text"`
	ExtractedHTML string `json:"extracted_html"`
}

// Verification is the one-time code and sign-in link a received message carries.
type Verification struct {
	Code *string `json:"code"`
	Link *string `json:"link"`
	Kind string  `json:"kind"`
}

// Attachment is a file of a message; URL downloads it with the key.
type Attachment struct {
	UUID        string `json:"uuid"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
}

// Recipient is the fate of one address of a sent message.
type Recipient struct {
	Email  string  `json:"email"`
	Status string  `json:"status"`
	Error  *string `json:"error"`
	// ProviderID is the mail provider's id of the message it accepted for
	// this recipient (SES, Mailgun); nil through an SMTP relay.
	ProviderID *string `json:"provider_id"`
}

// Authentication is a received message's SPF, DKIM and DMARC results.
type Authentication struct {
	SPF         string  `json:"spf"`
	DKIM        string  `json:"dkim"`
	DMARC       string  `json:"dmarc"`
	Verdict     string  `json:"verdict"`
	DMARCPolicy *string `json:"dmarc_policy"`
}

// Page is one page of a list asked for with limit and offset: the
// paginated envelope every list answers then.
type Page[T any] struct {
	Count    int     `json:"count"`
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
	Results  []T     `json:"results"`
}

// MessagePage is a page of the email message list.
type MessagePage = Page[MessageSummary]

// Thread is a conversation's summary.
type Thread struct {
	ThreadID        string   `json:"thread_id"`
	Inbox           int64    `json:"inbox"`
	Subject         string   `json:"subject"`
	Preview         string   `json:"preview"`
	MessageCount    int      `json:"message_count"`
	UnreadCount     int      `json:"unread_count"`
	AttachmentNames []string `json:"attachment_names"`
	Participants    []string `json:"participants"`
	Labels          []string `json:"labels"`     // the union of its messages' labels
	Highlights      []string `json:"highlights"` // for a search: its newest matching message's snippets
	LastMessageDT   string   `json:"last_message_dt"`
}

// ThreadDetail is a thread with its messages, oldest first, as summaries
// (no bodies).
type ThreadDetail struct {
	ThreadID string           `json:"thread_id"`
	Inbox    int64            `json:"inbox"`
	Subject  string           `json:"subject"`
	Labels   []string         `json:"labels"`
	Messages []MessageSummary `json:"messages"`
}

// SMS is a text message.
type SMS struct {
	ID             int64         `json:"id"`
	Identity       string        `json:"identity"`
	PhoneNumber    string        `json:"phone_number"`
	FromNumber     string        `json:"from_number"`
	ToNumber       string        `json:"to_number"`
	Body           string        `json:"body"`
	Direction      string        `json:"direction"`
	IsRead         bool          `json:"is_read"`
	Status         string        `json:"status"`
	Error          *string       `json:"error"`
	ConversationID string        `json:"conversation_id"`
	ProviderSID    *string       `json:"provider_sid"`
	Attachments    []SMSMedia    `json:"attachments"`
	Verification   *Verification `json:"verification"`
	Blocked        bool          `json:"blocked"`    // from a sender an inbound rule refuses
	Highlights     []string      `json:"highlights"` // for a search: snippets with <mark>…</mark>
	CreatedDT      string        `json:"created_dt"`
}

// SMSMedia is an MMS's file, kept at the provider.
type SMSMedia struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
}

// Conversation is the summary of the texts between one of our numbers and
// one other party.
type Conversation struct {
	ConversationID string `json:"conversation_id"`
	Identity       string `json:"identity"`
	PhoneNumber    string `json:"phone_number"`
	Counterpart    string `json:"counterpart"`
	MessageCount   int    `json:"message_count"`
	UnreadCount    int    `json:"unread_count"`
	Preview        string `json:"preview"`
	LastMessageDT  string `json:"last_message_dt"`
}

// ConversationDetail is a conversation with its messages, oldest first.
type ConversationDetail struct {
	Conversation
	Messages []SMS `json:"messages"`
}

// VoiceAgent is where an identity's number sends its calls.
type VoiceAgent struct {
	Identity     string  `json:"identity"`
	ResponseURL  *string `json:"response_url"`
	Method       string  `json:"method"`
	Enabled      bool    `json:"enabled"`
	Mode         string  `json:"mode"`
	StreamURL    *string `json:"stream_url"`
	RecordCalls  bool    `json:"record_calls"`
	StreamSecret *string `json:"stream_secret"`
	UpdatedDT    *string `json:"updated_dt"`
}

// Call is a phone call to or from an identity's number.
type Call struct {
	ID              int64       `json:"id"`
	Identity        string      `json:"identity"`
	Phone           string      `json:"phone"`
	Direction       string      `json:"direction"`
	FromNumber      string      `json:"from_number"`
	ToNumber        string      `json:"to_number"`
	Status          string      `json:"status"`
	StartedDT       string      `json:"started_dt"`
	EndedDT         *string     `json:"ended_dt"`
	DurationSeconds *int        `json:"duration_seconds"`
	ProviderSID     string      `json:"provider_sid"`
	Mode            *string     `json:"mode"`
	Stream          *CallStream `json:"stream"`
	RecordingURL    *string     `json:"recording_url"`
	EndReason       *string     `json:"end_reason"`
}

// CallStream is what the media bridge counted on a streamed call.
type CallStream struct {
	ConnectedDT      string `json:"connected_dt"`
	FramesFromCaller int64  `json:"frames_from_caller"`
	FramesToCaller   int64  `json:"frames_to_caller"`
	FramesDropped    int64  `json:"frames_dropped"`
	DTMF             int64  `json:"dtmf"`
}

// PlaceCall is a call to place; empty fields take the voice-agent setting.
type PlaceCall struct {
	To          string `json:"to"`
	Mode        string `json:"mode,omitempty"`
	StreamURL   string `json:"stream_url,omitempty"`
	ResponseURL string `json:"response_url,omitempty"`
	Record      bool   `json:"record,omitempty"`
}

// Contact is someone an identity knows.
type Contact struct {
	UUID        string   `json:"uuid"`
	Identity    string   `json:"identity"`
	Email       string   `json:"email"`
	DisplayName string   `json:"display_name"`
	Nickname    string   `json:"nickname"`
	PhoneNumber string   `json:"phone_number"`
	Source      string   `json:"source"`
	Highlights  []string `json:"highlights"` // for a search: snippets with <mark>…</mark>
	CreatedDT   string   `json:"created_dt"`
	UpdatedDT   string   `json:"updated_dt"`
}

// Password is a stored login.
type Password struct {
	UUID      string `json:"uuid"`
	Identity  string `json:"identity"`
	Domain    string `json:"domain"`
	Username  string `json:"username"`
	Password  string `json:"password"`
	Notes     string `json:"notes"`
	HasTOTP   bool   `json:"has_totp"`
	CreatedDT string `json:"created_dt"`
	UpdatedDT string `json:"updated_dt"`
}

// Secret is a named value.
type Secret struct {
	UUID      string `json:"uuid"`
	Identity  string `json:"identity"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	CreatedDT string `json:"created_dt"`
	UpdatedDT string `json:"updated_dt"`
}

// EmailDraft is a message kept unsent (docs/api.md, "Email: drafts,
// scheduled send and approval").
type EmailDraft struct {
	ID               string   `json:"id"`
	URL              string   `json:"url"`
	Identity         string   `json:"identity"`
	Inbox            int64    `json:"inbox"`
	Kind             string   `json:"kind"`
	ReplyTo          *int64   `json:"reply_to"`
	ForwardOf        *int64   `json:"forward_of"`
	To               []string `json:"to_email"`
	Cc               []string `json:"cc"`
	Bcc              []string `json:"bcc"`
	Subject          *string  `json:"subject"`
	Content          *string  `json:"content"`
	HTML             string   `json:"html"`
	Preview          string   `json:"preview"`
	AttachmentUUIDs  []string `json:"attachment_uuids"`
	SendAt           *string  `json:"send_at"`
	AwaitingApproval bool     `json:"awaiting_approval"`
	CreatedDT        string   `json:"created_dt"`
	UpdatedDT        string   `json:"updated_dt"`
}
