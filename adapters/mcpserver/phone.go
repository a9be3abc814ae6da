package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/callsign/callsign/client"
)

type sendSMSIn struct {
	Scope
	To   []string `json:"to" jsonschema:"phone numbers in E.164 form, such as +14155550100"`
	Body string   `json:"body" jsonschema:"the text, up to 1,600 characters"`
}

type sendSMSOut struct {
	Messages []client.SMS `json:"messages" jsonschema:"one per number, with its delivery status"`
}

// textFilters narrow list_sms and search_texts.
type textFilters struct {
	Direction string `json:"direction,omitempty" jsonschema:"incoming (received) or outgoing (sent)"`
	IsRead    *bool  `json:"is_read,omitempty" jsonschema:"true for read texts only, false for unread only"`
	Limit     int    `json:"limit,omitempty" jsonschema:"how many texts (default 50, at most 200)"`
	Offset    int    `json:"offset,omitempty" jsonschema:"how many to skip, for the next page"`
}

type listSMSIn struct {
	Scope
	textFilters
	Query    string `json:"query,omitempty" jsonschema:"a search: see search_texts"`
	Ordering string `json:"ordering,omitempty" jsonschema:"without query: -created_dt (the default): newest first; created_dt: oldest first"`
}

type searchTextsIn struct {
	Scope
	textFilters
	Query string `json:"query" jsonschema:"search the texts' words (all must match, stemmed), \"exact phrase\", -word, from:/to: (a part of the number), is:unread, before:/after: YYYY-MM-DD; hits come most relevant first"`
}

type listSMSOut struct {
	Count    int          `json:"count" jsonschema:"how many texts match in all"`
	Messages []client.SMS `json:"messages" jsonschema:"newest first (or as ordering says), or for a search most relevant first with highlights; each with the verification code or link it carries"`
}

type listConversationsIn struct {
	Scope
	HasUnread *bool `json:"has_unread,omitempty" jsonschema:"true for conversations with unread texts only"`
}

type listConversationsOut struct {
	Conversations []client.Conversation `json:"conversations" jsonschema:"latest first"`
}

type conversationIn struct {
	Scope
	ConversationID string `json:"conversation_id" jsonschema:"the conversation's id, as list_sms_conversations shows it"`
}

type waitSMSIn struct {
	Scope
	From           string `json:"from,omitempty" jsonschema:"wait for a text from this number (E.164)"`
	BodyContains   string `json:"body_contains,omitempty" jsonschema:"wait for a text containing this (ignoring case)"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait, 1 to 60 seconds (default 30)"`
}

type waitSMSOut struct {
	Message *client.SMS `json:"message" jsonschema:"the text that arrived, or null when none did in time"`
}

type voiceAgentIn struct {
	Scope
}

type setVoiceAgentIn struct {
	Scope
	ResponseURL *string `json:"response_url,omitempty" jsonschema:"the absolute http(s) URL that answers calls to this identity's number"`
	Method      *string `json:"method,omitempty" jsonschema:"POST (default) or GET"`
	Enabled     *bool   `json:"enabled,omitempty" jsonschema:"false stops sending calls there"`
}

type placeCallIn struct {
	Scope
	To          string `json:"to" jsonschema:"the number to call, in E.164 form such as +14155550100"`
	StreamURL   string `json:"stream_url,omitempty" jsonschema:"your ws(s) WebSocket for the call's live audio (Twilio Media Streams format); default the voice-agent setting's"`
	ResponseURL string `json:"response_url,omitempty" jsonschema:"an http(s) URL answering the call in TwiML instead of a stream"`
	Record      bool   `json:"record,omitempty" jsonschema:"record the call's audio (the caller is told)"`
}

type listCallsIn struct {
	Scope
	Limit  int `json:"limit,omitempty" jsonschema:"how many calls (default 50, at most 200)"`
	Offset int `json:"offset,omitempty" jsonschema:"how many to skip, for the next page"`
}

type listCallsOut struct {
	Count int           `json:"count" jsonschema:"how many calls in all"`
	Calls []client.Call `json:"calls" jsonschema:"newest first"`
}

type hangUpIn struct {
	Scope
	CallID int64 `json:"call_id" jsonschema:"the call's id, as place_call or list_calls shows it"`
}

func (s *session) addCallTools() {
	addTool(s, tool{name: "place_call", title: "Place a phone call", outward: true,
		description: "Call a phone number from this identity's number. The call's live audio goes to stream_url (or the voice-agent setting's), in Twilio's Media Streams format; the call is returned queued."},
		func(ctx context.Context, c *client.Client, in placeCallIn) (client.Call, error) {
			return c.PlaceCall(ctx, client.PlaceCall{To: in.To, StreamURL: in.StreamURL, ResponseURL: in.ResponseURL, Record: in.Record})
		})
	addTool(s, tool{name: "list_calls", title: "List phone calls", readOnly: true,
		description: "List this identity's calls, newest first, with status, stream counts, recording URL and why each ended."},
		func(ctx context.Context, c *client.Client, in listCallsIn) (listCallsOut, error) {
			p, err := c.Calls(ctx, in.Limit, in.Offset)
			return listCallsOut{Count: p.Count, Calls: p.Results}, err
		})
	addTool(s, tool{name: "hangup_call", title: "Hang up a call", destructive: true, idempotent: true,
		description: "End a call in progress."},
		func(ctx context.Context, c *client.Client, in hangUpIn) (client.Call, error) {
			return c.HangUp(ctx, in.CallID)
		})
}

func (s *session) addPhoneTools() {
	s.addCallTools()
	addTool(s, tool{name: "send_sms", title: "Send a text message", outward: true,
		description: "Send a text message (SMS) from this identity's phone number to one or more numbers."},
		func(ctx context.Context, c *client.Client, in sendSMSIn) (sendSMSOut, error) {
			out := sendSMSOut{Messages: []client.SMS{}}
			for _, to := range in.To {
				m, err := c.SendSMS(ctx, to, in.Body)
				if err != nil {
					return out, partly(err, out.Messages)
				}
				out.Messages = append(out.Messages, m)
			}
			return out, nil
		})
	addTool(s, tool{name: "list_sms", title: "List or search text messages", readOnly: true,
		description: "List this identity's text messages (SMS), newest first, each with the verification code or link it carries; or search them by words (query, as search_texts), most relevant first, each hit with highlights."},
		func(ctx context.Context, c *client.Client, in listSMSIn) (listSMSOut, error) {
			return listTexts(ctx, c, in.Query, in.Ordering, in.textFilters)
		})
	addTool(s, tool{name: "search_texts", title: "Search text messages", readOnly: true,
		description: "Search this identity's text messages (SMS) by their words, the sender's or recipient's number (from:, to:) and dates; hits most relevant first, each with highlights."},
		func(ctx context.Context, c *client.Client, in searchTextsIn) (listSMSOut, error) {
			if in.Query == "" {
				return listSMSOut{}, errEmptySearch
			}
			return listTexts(ctx, c, in.Query, "", in.textFilters)
		})
	addTool(s, tool{name: "list_sms_conversations", title: "List text conversations", readOnly: true,
		description: "List text-message conversations (one per other party), latest first, with unread counts and a preview."},
		func(ctx context.Context, c *client.Client, in listConversationsIn) (listConversationsOut, error) {
			l, err := c.Conversations(ctx, in.HasUnread)
			return listConversationsOut{Conversations: l}, err
		})
	addTool(s, tool{name: "read_sms_conversation", title: "Read a text conversation", readOnly: true,
		description: "Read every text message of one conversation, oldest first."},
		func(ctx context.Context, c *client.Client, in conversationIn) (client.ConversationDetail, error) {
			return c.Conversation(ctx, in.ConversationID)
		})
	addTool(s, tool{name: "wait_for_sms", title: "Wait for a text message", readOnly: true,
		description: "Wait up to timeout_seconds (at most 60) for the next text message to arrive, optionally from a number or containing some text, and return it; message is null when none came in time (for a verification code, wait_for_code)."},
		s.waitForSMS)
	addTool(s, tool{name: "get_voice_agent", title: "Get the voice agent", readOnly: true,
		description: "Show where calls to this identity's phone number are sent (the voice agent's URL), and whether that is on."},
		func(ctx context.Context, c *client.Client, _ voiceAgentIn) (client.VoiceAgent, error) {
			id, err := c.ActingIdentity(ctx)
			if err != nil {
				return client.VoiceAgent{}, err
			}
			return c.VoiceAgent(ctx, id)
		})
	// Outward and destructive: calls (the callers' numbers and words) go
	// to the URL, which replaces the one before.
	addTool(s, tool{name: "set_voice_agent", title: "Set the voice agent", destructive: true, idempotent: true, outward: true,
		description: "Send calls to this identity's phone number to a URL that answers them (a voice agent), or turn that off; fields left out stay as they are."},
		func(ctx context.Context, c *client.Client, in setVoiceAgentIn) (client.VoiceAgent, error) {
			id, err := c.ActingIdentity(ctx)
			if err != nil {
				return client.VoiceAgent{}, err
			}
			return c.SetVoiceAgent(ctx, id, client.VoiceAgentInput{ResponseURL: in.ResponseURL, Method: in.Method, Enabled: in.Enabled})
		})
}

// listTexts is a page of texts: a search when query is set, else newest
// first or as ordering says.
func listTexts(ctx context.Context, c *client.Client, query, ordering string, f textFilters) (listSMSOut, error) {
	p, err := c.SMSMessages(ctx, client.SMSFilter{Query: query, Ordering: ordering, Direction: f.Direction, IsRead: f.IsRead, Limit: f.Limit, Offset: f.Offset})
	return listSMSOut{Count: p.Count, Messages: p.Results}, err
}

// partly adds to a refusal what was already sent before it.
func partly(err error, sent []client.SMS) error {
	if len(sent) == 0 {
		return err
	}
	to := make([]string, len(sent))
	for i, m := range sent {
		to[i] = m.ToNumber
	}
	return fmt.Errorf("%w\n(sent to %s before this error)", err, strings.Join(to, ", "))
}

// waitForSMS waits for the next received text that matches.
func (s *session) waitForSMS(ctx context.Context, c *client.Client, in waitSMSIn) (waitSMSOut, error) {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout(in.TimeoutSeconds))
	defer cancel()
	changed, stop, err := s.signals.SMS(ctx, c)
	if err != nil {
		return waitSMSOut{}, err
	}
	defer stop()
	m, err := c.WaitForSMS(ctx, client.SMSWait{From: in.From, BodyContains: in.BodyContains}, changed)
	return waitSMSOut{Message: m}, err
}
