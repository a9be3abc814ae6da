package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/client"
)

func contactRows(w io.Writer, l []client.Contact) {
	rows := make([][]string, len(l))
	for i, ct := range l {
		rows[i] = []string{ct.DisplayName, ct.Email, ct.PhoneNumber, ct.Source, ct.UUID}
	}
	table(w, []string{"NAME", "EMAIL", "PHONE", "SOURCE", "UUID"}, rows)
}

func (c *cli) contactsCommand() *cobra.Command {
	contacts := group(&cobra.Command{Use: "contacts", Short: "List, add and find the identity's contacts"})
	ls := leaf(&cobra.Command{Use: "ls", Short: "List contacts, oldest first",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			l, err := api.Contacts(ctx, "")
			return l, func(w io.Writer) { contactRows(w, l) }, err
		})})
	var in client.ContactInput
	add := leaf(&cobra.Command{Use: "add [--email ADDRESS] [--phone NUMBER] [--name NAME] [--nickname NAME]", Short: "Add a contact",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			ct, err := api.AddContact(ctx, in)
			return ct, func(w io.Writer) { contactRows(w, []client.Contact{ct}) }, err
		})})
	add.Flags().StringVar(&in.Email, "email", "", "the contact's email address")
	add.Flags().StringVar(&in.PhoneNumber, "phone", "", "the contact's number, E.164")
	add.Flags().StringVar(&in.DisplayName, "name", "", "the contact's name")
	add.Flags().StringVar(&in.Nickname, "nickname", "", "a nickname")
	find := &cobra.Command{Use: "find TEXT", Short: "Find contacts whose email, name or number contains TEXT", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			l, err := api.SearchContacts(ctx, args[0])
			return l, func(w io.Writer) { contactRows(w, l) }, err
		})}
	contacts.AddCommand(ls, add, find)
	return contacts
}
