package client

import (
	"context"
	"net/url"
	"strconv"
)

// DeleteMessage deletes an email message.
func (c *Client) DeleteMessage(ctx context.Context, id int64) error {
	if err := c.ownMessage(ctx, id); err != nil {
		return err
	}
	return c.call(ctx, "DELETE", messagePath(id), nil, nil, nil)
}

// DeleteSMS deletes our record of a text message.
func (c *Client) DeleteSMS(ctx context.Context, id int64) error {
	return c.deleteOwned(ctx, "/api/messages/"+strconv.FormatInt(id, 10)+"/", "Message")
}

// DeleteContact deletes a contact.
func (c *Client) DeleteContact(ctx context.Context, uuid string) error {
	return c.deleteOwned(ctx, "/api/contacts/"+url.PathEscape(uuid)+"/", "Contact")
}

// DeletePassword deletes a stored login.
func (c *Client) DeletePassword(ctx context.Context, uuid string) error {
	return c.deleteOwned(ctx, "/api/passwords/"+url.PathEscape(uuid)+"/", "Password")
}

// DeleteSecret deletes a secret.
func (c *Client) DeleteSecret(ctx context.Context, uuid string) error {
	return c.deleteOwned(ctx, "/api/secrets/"+url.PathEscape(uuid)+"/", "Secret")
}

// deleteOwned deletes the object at path, checking first, when the client
// acts for one identity, that the object is that identity's.
func (c *Client) deleteOwned(ctx context.Context, path, what string) error {
	if c.identity != "" {
		var o struct {
			Identity string `json:"identity"`
		}
		if err := c.call(ctx, "GET", path, nil, nil, &o); err != nil {
			return err
		}
		if err := c.own(o.Identity, what); err != nil {
			return err
		}
	}
	return c.call(ctx, "DELETE", path, nil, nil, nil)
}
