package mcpserver

import (
	"context"

	"github.com/callsign/callsign/client"
)

type labelIn struct {
	Scope
	MessageID int64  `json:"message_id" jsonschema:"the message's id, as list_emails shows it"`
	Label     string `json:"label" jsonschema:"1 to 64 characters of a-z, 0-9, '.', '_' and '-' (upper case is folded), such as todo or needs-reply"`
}

type labelsOut struct {
	MessageID int64    `json:"message_id"`
	Labels    []string `json:"labels" jsonschema:"the message's labels now, sorted"`
}

// addLabelTools lets an agent keep its own state on mail: labels, which
// list_emails and list_threads filter on and mail clients see as keywords.
func (s *session) addLabelTools() {
	addTool(s, tool{name: "add_label", title: "Label an email",
		description: "Put a label on a message, to keep your own state (todo, needs-reply, handled). Adding a label it carries changes nothing; a message carries at most 20. Find labelled mail with list_emails' labels and exclude_labels."},
		func(ctx context.Context, c *client.Client, in labelIn) (labelsOut, error) {
			m, err := c.AddLabel(ctx, in.MessageID, in.Label)
			return labelsOut{MessageID: in.MessageID, Labels: labelsOrEmpty(m.Labels)}, err
		})
	addTool(s, tool{name: "remove_label", title: "Remove an email's label",
		description: "Take a label off a message; removing one it does not carry changes nothing."},
		func(ctx context.Context, c *client.Client, in labelIn) (labelsOut, error) {
			if err := c.RemoveLabel(ctx, in.MessageID, in.Label); err != nil {
				return labelsOut{}, err
			}
			m, err := c.Message(ctx, in.MessageID)
			return labelsOut{MessageID: in.MessageID, Labels: labelsOrEmpty(m.Labels)}, err
		})
}

// labelsOrEmpty shows no labels as [] rather than null.
func labelsOrEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
