package client

import (
	"context"
	"net/url"
)

// Contacts lists contacts, oldest first; source ("auto" or "manual"), when
// set, keeps those.
func (c *Client) Contacts(ctx context.Context, source string) ([]Contact, error) {
	q := url.Values{}
	if source != "" {
		q.Set("source", source)
	}
	var l []Contact
	return l, c.call(ctx, "GET", "/api/contacts/", c.scoped(q), nil, &l)
}

// ContactFilter narrows a page of contacts; zero fields do not filter.
type ContactFilter struct {
	Source string // auto or manual
	// Query is a search (q) of names, email and number as whole words:
	// see docs/api.md, "Searching texts and contacts".
	Query string
	// Ordering is created_dt or -created_dt (newest first); empty is the
	// API's oldest first. A search is ordered by relevance alone.
	Ordering string
	Limit    int // 1-200; 0 is the API's 50
	Offset   int
}

// ContactPage is a page of contacts: oldest first by default, or with a
// Query most relevant first.
func (c *Client) ContactPage(ctx context.Context, f ContactFilter) (Page[Contact], error) {
	q := pageQuery(f.Limit, f.Offset)
	if f.Ordering != "" {
		q.Set("ordering", f.Ordering)
	}
	if f.Source != "" {
		q.Set("source", f.Source)
	}
	if f.Query != "" {
		q.Set("q", f.Query)
	}
	var p Page[Contact]
	return p, c.call(ctx, "GET", "/api/contacts/", c.scoped(q), nil, &p)
}

// FindContact is the contact with that email (ignoring case) or phone
// number (E.164), or both.
func (c *Client) FindContact(ctx context.Context, email, phone string) (Contact, error) {
	q := url.Values{}
	if email != "" {
		q.Set("email", email)
	}
	if phone != "" {
		q.Set("phone_number", phone)
	}
	var ct Contact
	return ct, c.call(ctx, "GET", "/api/contacts/find/", c.scoped(q), nil, &ct)
}

// SearchContacts lists contacts whose email, names or number contain text.
func (c *Client) SearchContacts(ctx context.Context, text string) ([]Contact, error) {
	var l []Contact
	return l, c.call(ctx, "GET", "/api/contacts/search/", c.scoped(url.Values{"q": {text}}), nil, &l)
}

// ContactInput is a contact to add.
type ContactInput struct {
	Email       string `json:"email,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	Nickname    string `json:"nickname,omitempty"`
	PhoneNumber string `json:"phone_number,omitempty"`
}

// AddContact stores a contact.
func (c *Client) AddContact(ctx context.Context, in ContactInput) (Contact, error) {
	var ct Contact
	return ct, c.call(ctx, "POST", "/api/contacts/", c.scoped(nil), in, &ct)
}
