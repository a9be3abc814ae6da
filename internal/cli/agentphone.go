package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/client"
)

func (c *cli) smsCommand() *cobra.Command {
	sms := group(&cobra.Command{Use: "sms", Short: "Send and read the identity's text messages"})
	var to []string
	send := &cobra.Command{Use: "send --to NUMBER BODY|-", Short: "Text a number (E.164, such as +14155550100)", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			body, err := c.readValue(args[0])
			if err != nil {
				return nil, nil, err
			}
			var sent []client.SMS
			for _, n := range to {
				m, err := api.SendSMS(ctx, n, body)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", n, err)
				}
				sent = append(sent, m)
			}
			return sent, func(w io.Writer) {
				for _, m := range sent {
					fmt.Fprintf(w, "Sent text %d to %s (%s).\n", m.ID, m.ToNumber, m.Status)
				}
			}, nil
		})}
	send.Flags().StringSliceVar(&to, "to", nil, "the numbers to text (repeat or separate with commas)")
	_ = send.MarkFlagRequired("to")

	ls := leaf(&cobra.Command{Use: "ls", Short: "List text conversations, latest first",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			l, err := api.Conversations(ctx, nil)
			return l, func(w io.Writer) {
				rows := make([][]string, len(l))
				for i, cv := range l {
					rows[i] = []string{cv.ConversationID, cv.Counterpart, strconv.Itoa(cv.MessageCount), strconv.Itoa(cv.UnreadCount), ago(cv.LastMessageDT), cut(cv.Preview, 50)}
				}
				table(w, []string{"CONVERSATION", "WITH", "TEXTS", "UNREAD", "LAST", "PREVIEW"}, rows)
			}, err
		})})

	read := &cobra.Command{Use: "read CONVERSATION", Short: "Show the texts of a conversation, oldest first", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			d, err := api.Conversation(ctx, args[0])
			return d, func(w io.Writer) {
				rows := make([][]string, len(d.Messages))
				for i, m := range d.Messages {
					who := m.FromNumber
					if m.Direction == "outgoing" {
						who = "me"
					}
					rows[i] = []string{ago(m.CreatedDT), who, m.Status, cut(m.Body, 80)}
				}
				table(w, []string{"WHEN", "FROM", "STATUS", "TEXT"}, rows)
			}, err
		})}
	sms.AddCommand(send, ls, read)
	return sms
}

func (c *cli) phoneCommand() *cobra.Command {
	phone := group(&cobra.Command{Use: "phone", Short: "The identity's phone number"})
	var country string
	provision := leaf(&cobra.Command{Use: "provision [--country US]", Short: "Get the identity a phone number",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			id, err := api.ActingIdentity(ctx)
			if err == nil && id == "" {
				err = usageError{"--identity is required with a management key"}
			}
			if err != nil {
				return nil, nil, err
			}
			ident, err := api.ProvisionPhone(ctx, id, country)
			return ident, func(w io.Writer) { fmt.Fprintf(w, "%s now has the number %s.\n", ident.Name, deref(ident.Phone)) }, err
		})})
	provision.Flags().StringVar(&country, "country", "", "ISO country code of the number (default US)")
	phone.AddCommand(provision)
	return phone
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
