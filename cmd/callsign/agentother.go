package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/google/uuid"
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

func (c *cli) passwordCommand() *cobra.Command {
	password := group(&cobra.Command{Use: "password", Short: "List, show and generate the identity's stored passwords"})
	var domain string
	ls := leaf(&cobra.Command{Use: "ls [--domain HOST]", Short: "List stored logins (never their passwords)",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			l, err := api.Passwords(ctx, domain)
			type login struct {
				UUID      string `json:"uuid"`
				Identity  string `json:"identity"`
				Domain    string `json:"domain"`
				Username  string `json:"username"`
				CreatedDT string `json:"created_dt"`
				UpdatedDT string `json:"updated_dt"`
			}
			out := make([]login, len(l))
			rows := make([][]string, len(l))
			for i, p := range l {
				out[i] = login{p.UUID, p.Identity, p.Domain, p.Username, p.CreatedDT, p.UpdatedDT}
				rows[i] = []string{p.Domain, p.Username, ago(p.UpdatedDT), p.UUID}
			}
			return out, func(w io.Writer) { table(w, []string{"DOMAIN", "USERNAME", "UPDATED", "UUID"}, rows) }, err
		})})
	ls.Flags().StringVar(&domain, "domain", "", "only logins for this host and its subdomains")
	get := &cobra.Command{Use: "get UUID|DOMAIN", Short: "Show a stored login with its password", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			var p client.Password
			var err error
			if uuid.Validate(args[0]) == nil {
				p, err = api.Password(ctx, args[0])
			} else {
				p, err = api.PasswordForDomain(ctx, args[0])
			}
			return p, func(w io.Writer) {
				fields(w, "Domain", p.Domain, "Username", p.Username, "Password", p.Password, "Notes", p.Notes, "UUID", p.UUID)
			}, err
		})}
	var spec client.PasswordSpec
	var noSpecial bool
	generate := leaf(&cobra.Command{Use: "generate [--length N] [--no-special]", Short: "Print a new random password (nothing is stored)",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			if noSpecial {
				no := false
				spec.Special = &no
			}
			pw, err := api.GeneratePassword(ctx, spec)
			return map[string]string{"password": pw}, func(w io.Writer) { fmt.Fprintln(w, pw) }, err
		})})
	generate.Flags().IntVar(&spec.Length, "length", 0, "8 to 128 characters (default 20)")
	generate.Flags().BoolVar(&noSpecial, "no-special", false, "letters and digits only")
	generate.Flags().StringVar(&spec.ExcludeChars, "exclude", "", "characters never to use")
	password.AddCommand(ls, get, generate)
	return password
}

func (c *cli) secretCommand() *cobra.Command {
	secret := group(&cobra.Command{Use: "secret", Short: "List, read and set the identity's secrets"})
	ls := leaf(&cobra.Command{Use: "ls", Short: "List secrets by name (never their values)",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			l, err := api.Secrets(ctx, "")
			type named struct {
				UUID      string `json:"uuid"`
				Identity  string `json:"identity"`
				Key       string `json:"key"`
				CreatedDT string `json:"created_dt"`
				UpdatedDT string `json:"updated_dt"`
			}
			out := make([]named, len(l))
			rows := make([][]string, len(l))
			for i, s := range l {
				out[i] = named{s.UUID, s.Identity, s.Key, s.CreatedDT, s.UpdatedDT}
				rows[i] = []string{s.Key, ago(s.UpdatedDT), s.UUID}
			}
			return out, func(w io.Writer) { table(w, []string{"KEY", "UPDATED", "UUID"}, rows) }, err
		})})
	get := &cobra.Command{Use: "get KEY", Short: "Print a secret's value", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			s, err := api.SecretByKey(ctx, args[0])
			return s, func(w io.Writer) { fmt.Fprintln(w, s.Value) }, err
		})}
	set := &cobra.Command{Use: "set KEY [VALUE|-]", Short: "Store a value under KEY (read from standard input when left out or -)", Args: cobra.RangeArgs(1, 2),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			arg := "-"
			if len(args) == 2 {
				arg = args[1]
			}
			value, err := c.readValue(arg)
			if err != nil {
				return nil, nil, err
			}
			s, created, err := api.SetSecret(ctx, args[0], value)
			verb := "Updated"
			if created {
				verb = "Created"
			}
			return s, func(w io.Writer) { fmt.Fprintf(w, "%s secret %s.\n", verb, s.Key) }, err
		})}
	secret.AddCommand(ls, get, set)
	return secret
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
