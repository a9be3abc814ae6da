package mcpserver

import (
	"context"

	"github.com/callsign/callsign/client"
)

type deleteMessageIn struct {
	Scope
	MessageID int64 `json:"message_id" jsonschema:"the message's id, as the lists show it"`
}

type deleteByUUIDIn struct {
	Scope
	UUID string `json:"uuid" jsonschema:"its uuid, as the lists show it"`
}

type deleteSecretIn struct {
	Scope
	Key  string `json:"key,omitempty" jsonschema:"the secret's name"`
	UUID string `json:"uuid,omitempty" jsonschema:"or its uuid"`
}

type deletedOut struct {
	Deleted bool `json:"deleted" jsonschema:"true: it is gone (a second call finds nothing)"`
}

// addDeleteTools registers the deletes a key may make through the API:
// destructive, and idempotent (once gone, a call changes nothing more).
func (s *session) addDeleteTools() {
	del := func(name, title, description string) tool {
		return tool{name: name, title: title, description: description, destructive: true, idempotent: true}
	}
	addTool(s, del("delete_email", "Delete an email", "Delete an email message for good, with its attachments; one still waiting in the outbox is then never sent."),
		func(ctx context.Context, c *client.Client, in deleteMessageIn) (deletedOut, error) {
			return deletedOut{Deleted: true}, c.DeleteMessage(ctx, in.MessageID)
		})
	addTool(s, del("delete_sms", "Delete a text message", "Delete this identity's record of a text message for good (one already sent is not called back)."),
		func(ctx context.Context, c *client.Client, in deleteMessageIn) (deletedOut, error) {
			return deletedOut{Deleted: true}, c.DeleteSMS(ctx, in.MessageID)
		})
	addTool(s, del("delete_contact", "Delete a contact", "Delete a contact for good."),
		func(ctx context.Context, c *client.Client, in deleteByUUIDIn) (deletedOut, error) {
			return deletedOut{Deleted: true}, c.DeleteContact(ctx, in.UUID)
		})
	addTool(s, del("delete_password", "Delete a password", "Delete a stored login (site, username, password, notes) for good."),
		func(ctx context.Context, c *client.Client, in deleteByUUIDIn) (deletedOut, error) {
			return deletedOut{Deleted: true}, c.DeletePassword(ctx, in.UUID)
		})
	addTool(s, del("delete_secret", "Delete a secret", "Delete a secret, named by key or uuid, for good."),
		func(ctx context.Context, c *client.Client, in deleteSecretIn) (deletedOut, error) {
			sec, err := findSecret(ctx, c, in.Key, in.UUID)
			if err != nil {
				return deletedOut{}, err
			}
			return deletedOut{Deleted: true}, c.DeleteSecret(ctx, sec.UUID)
		})
}
