package client

import (
	"context"
	"strings"
)

// MailWait says which mail a wait is for; zero fields match anything.
type MailWait struct {
	// From is an address (ignoring case), or a domain for any sender
	// there and at its subdomains.
	From string
	// SubjectContains is text the subject holds, ignoring case.
	SubjectContains string
}

// WaitForMessage returns the first message received after the call began
// that matches w, with its bodies. It looks when it begins and each time
// wake is signalled; when ctx ends first it returns nil and no error.
func (c *Client) WaitForMessage(ctx context.Context, w MailWait, wake <-chan struct{}) (*Message, error) {
	cursor, err := c.newestMessage(ctx)
	if err != nil {
		return nil, ended(ctx, err)
	}
	return waitUntil(ctx, wake, func() (*Message, error) {
		found, next, err := c.arrived(ctx, cursor, w)
		cursor = next
		if err != nil || found == nil {
			return nil, err
		}
		m, err := c.Message(ctx, found.ID) // a list comes without bodies
		return &m, err
	})
}

// waitUntil looks, and looks again each time wake is signalled, until look
// finds something or fails, or ctx ends (nil, nil).
func waitUntil[T any](ctx context.Context, wake <-chan struct{}, look func() (*T, error)) (*T, error) {
	for {
		found, err := look()
		if err != nil || found != nil {
			return found, ended(ctx, err)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-wake:
		}
	}
}

// ended is err, unless it comes from ctx ending: a wait then found nothing.
func ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// newestMessage is the creation time of the newest message in reach, ""
// when there is none: later mail is what a wait is for.
func (c *Client) newestMessage(ctx context.Context) (string, error) {
	p, err := c.Messages(ctx, MessageFilter{Limit: 1, ExactCount: true})
	if err != nil || p.Count == 0 {
		return "", err
	}
	if p, err = c.Messages(ctx, MessageFilter{Limit: 1, Offset: p.Count - 1}); err != nil || len(p.Results) == 0 {
		return "", err
	}
	return p.Results[0].CreatedDT, nil
}

// Cursor is a place in the stream of messages in reach: what is stored
// after it is new. The zero Cursor is not placed yet.
type Cursor struct {
	after  string // a created_dt; "" before the first message
	placed bool
}

// NewMessages calls each for every message stored after cur, oldest first,
// and returns the cursor past them. An unplaced cursor is first placed
// after the newest message, so that only later ones count.
func (c *Client) NewMessages(ctx context.Context, cur Cursor, each func(MessageSummary)) (Cursor, error) {
	if !cur.placed {
		after, err := c.newestMessage(ctx)
		return Cursor{after: after, placed: err == nil}, err
	}
	f := MessageFilter{Limit: 200}
	for {
		f.CreatedAfter = cur.after
		p, err := c.Messages(ctx, f)
		if err != nil {
			return cur, err
		}
		for _, m := range p.Results {
			cur.after = m.CreatedDT
			each(m)
		}
		if p.Next == nil {
			return cur, nil
		}
	}
}

// arrived is the first received message after cursor that matches, and
// the cursor past what it looked at.
func (c *Client) arrived(ctx context.Context, cursor string, w MailWait) (*MessageSummary, string, error) {
	from := strings.ToLower(strings.TrimSpace(w.From))
	f := MessageFilter{Direction: "incoming", Limit: 200}
	if strings.Contains(from, "@") {
		f.FromEmail = from
	}
	for {
		f.CreatedAfter = cursor
		p, err := c.Messages(ctx, f)
		if err != nil {
			return nil, cursor, err
		}
		for _, m := range p.Results {
			cursor = m.CreatedDT
			if matchesSender(m.FromEmail, from) && containsFold(m.Subject, w.SubjectContains) {
				return &m, cursor, nil
			}
		}
		if p.Next == nil {
			return nil, cursor, nil
		}
	}
}

// matchesSender: an address matches itself, a domain every address there
// and at its subdomains.
func matchesSender(addr, from string) bool {
	addr = strings.ToLower(addr)
	if from == "" || strings.Contains(from, "@") {
		return from == "" || addr == from
	}
	from = strings.TrimPrefix(from, "@")
	_, domain, _ := strings.Cut(addr, "@")
	return domain == from || strings.HasSuffix(domain, "."+from)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// SMSWait says which text a wait is for; zero fields match anything.
type SMSWait struct {
	From         string // the sender's number, E.164
	BodyContains string // ignoring case
}

// WaitForSMS returns the first text received after the call began that
// matches w, as WaitForMessage does for mail. It watches the
// conversations: one whose message count grew has new texts at its end.
func (c *Client) WaitForSMS(ctx context.Context, w SMSWait, wake <-chan struct{}) (*SMS, error) {
	seen, err := c.conversationSizes(ctx)
	if err != nil {
		return nil, ended(ctx, err)
	}
	return waitUntil(ctx, wake, func() (*SMS, error) { return c.textArrived(ctx, seen, w) })
}

func (c *Client) conversationSizes(ctx context.Context) (map[string]int, error) {
	l, err := c.Conversations(ctx, nil)
	sizes := make(map[string]int, len(l))
	for _, cv := range l {
		sizes[cv.ConversationID] = cv.MessageCount
	}
	return sizes, err
}

// textArrived is the first received text that matches among those added
// to a conversation since seen, which it brings up to date.
func (c *Client) textArrived(ctx context.Context, seen map[string]int, w SMSWait) (*SMS, error) {
	l, err := c.Conversations(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, cv := range l {
		before := seen[cv.ConversationID]
		if cv.MessageCount <= before || w.From != "" && cv.Counterpart != w.From {
			seen[cv.ConversationID] = cv.MessageCount
			continue
		}
		d, err := c.Conversation(ctx, cv.ConversationID)
		if err != nil {
			return nil, err
		}
		seen[cv.ConversationID] = len(d.Messages)
		for _, m := range d.Messages[min(before, len(d.Messages)):] {
			if m.Direction == "incoming" && containsFold(m.Body, w.BodyContains) {
				return &m, nil
			}
		}
	}
	return nil, nil
}
