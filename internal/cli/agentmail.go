package cli

import (
	"context"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/adapters/mcpserver"
	"github.com/callsign/callsign/client"
)

func (c *cli) whoamiCommand() *cobra.Command {
	return leaf(&cobra.Command{Use: "whoami", Short: "Show the identity and key the agent commands use",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			who, err := api.Whoami(ctx)
			if err != nil {
				return nil, nil, err
			}
			id, err := api.ActingIdentity(ctx)
			var ident *client.Identity
			if err == nil && id != "" {
				var i client.Identity
				i, err = api.Identity(ctx, id)
				ident = &i
			}
			if err != nil {
				return nil, nil, err
			}
			out := struct {
				client.Whoami
				Server   string           `json:"server"`
				ActingAs *client.Identity `json:"acting_as"`
			}{who, api.Server(), ident}
			return out, func(w io.Writer) {
				pairs := []string{"Server", api.Server(), "Account", who.Account, "Key", who.KeyType + " key " + who.KeyPrefix + "…"}
				if ident != nil {
					phone := "none (callsign phone provision)"
					if ident.Phone != nil {
						phone = *ident.Phone
					}
					pairs = append(pairs, "Identity", ident.Name+" ("+ident.UUID+")", "Email", ident.Inbox, "Phone", phone)
				}
				fields(w, pairs...)
			}, nil
		})})
}

func (c *cli) mailCommand() *cobra.Command {
	mail := group(&cobra.Command{Use: "mail", Short: "Read, send, answer and wait for the identity's email"})

	var unread bool
	var from string
	var labels []string
	var limit int
	ls := leaf(&cobra.Command{Use: "ls", Short: "List email messages, newest last",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			f := client.MessageFilter{FromEmail: from, Labels: labels, Limit: limit}
			if unread {
				no := false
				f.IsRead = &no
			}
			// The newest messages: the list is oldest first, so read its tail.
			p, err := api.Messages(ctx, client.MessageFilter{FromEmail: f.FromEmail, IsRead: f.IsRead, Labels: labels, Limit: 1, ExactCount: true})
			if err == nil && p.Count > limit {
				f.Offset = p.Count - limit
			}
			if err == nil {
				p, err = api.Messages(ctx, f)
			}
			if err != nil {
				return nil, nil, err
			}
			return p.Results, func(w io.Writer) {
				rows := make([][]string, len(p.Results))
				for i, m := range p.Results {
					mark := " "
					if !m.IsRead && m.Direction == "incoming" {
						mark = "*"
					}
					who := m.FromEmail
					if m.Direction == "outgoing" {
						who = "to " + m.ToEmail
					}
					rows[i] = []string{mark + strconv.FormatInt(m.ID, 10), ago(m.CreatedDT), cut(who, 40), cut(m.Subject, 60)}
				}
				table(w, []string{" ID", "WHEN", "FROM", "SUBJECT"}, rows)
			}, nil
		})})
	ls.Flags().BoolVar(&unread, "unread", false, "only unread messages")
	ls.Flags().StringVar(&from, "from", "", "only messages from this address")
	ls.Flags().StringSliceVar(&labels, "label", nil, "only messages carrying this label (repeat for several: all of them)")
	ls.Flags().IntVar(&limit, "limit", 20, "how many of the newest messages (1-200)")

	read := &cobra.Command{Use: "read ID", Short: "Show a message: its headers, text and attachments", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			id, err := messageID(args[0])
			if err != nil {
				return nil, nil, err
			}
			m, err := api.Message(ctx, id)
			return m, func(w io.Writer) { showMessage(w, m) }, err
		})}

	var d draftFlags
	send := leaf(&cobra.Command{Use: "send --to ADDRESS --subject TEXT [--body TEXT|-] [--attach FILE]...", Short: "Send a new message",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			draft, err := c.draft(ctx, api, d)
			if err != nil {
				return nil, nil, err
			}
			m, err := api.Compose(ctx, draft)
			return m, func(w io.Writer) { sent(w, m) }, err
		})})
	d.add(send, true)
	_ = send.MarkFlagRequired("to")

	var dd draftFlags
	var kept client.NewDraft
	draft := leaf(&cobra.Command{Use: "draft [--to ADDRESS] [--subject TEXT] [--body TEXT|-] [--reply-to ID] [--send-at TIME]",
		Short: "Keep a message for a person to approve (how a key that may not send writes mail)",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			var err error
			if kept.Draft, err = c.draft(ctx, api, dd); err != nil {
				return nil, nil, err
			}
			out, err := api.CreateDraft(ctx, kept)
			return out, func(w io.Writer) { drafted(w, out) }, err
		})})
	dd.add(draft, true)
	draft.Flags().Int64Var(&kept.ReplyTo, "reply-to", 0, "draft a reply to this message id (its recipients and subject follow it)")
	draft.Flags().StringVar(&kept.SendAt, "send-at", "", "when it leaves once approved (RFC 3339, such as 2026-12-01T09:00:00Z)")

	var rd draftFlags
	var all bool
	reply := &cobra.Command{Use: "reply ID --body TEXT|-", Short: "Answer a message (the subject and threading are set for you)", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			id, err := messageID(args[0])
			if err != nil {
				return nil, nil, err
			}
			draft, err := c.draft(ctx, api, rd)
			if err != nil {
				return nil, nil, err
			}
			kind := "reply"
			if all {
				kind = "reply-all"
			}
			m, err := api.Respond(ctx, id, kind, draft)
			return m, func(w io.Writer) { sent(w, m) }, err
		})}
	rd.add(reply, false)
	reply.Flags().BoolVar(&all, "all", false, "answer everyone the message went to")

	var wf client.MailWait
	var timeout time.Duration
	wait := leaf(&cobra.Command{Use: "wait [--from ADDRESS|DOMAIN] [--subject TEXT] [--timeout 60s]", Short: "Wait for the next message to arrive and show it",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			wake, stop, err := mcpserver.Feed{}.Mail(ctx, api)
			if err != nil {
				return nil, nil, err
			}
			defer stop()
			m, err := api.WaitForMessage(ctx, wf, wake)
			if err == nil && m == nil {
				err = fmt.Errorf("no message arrived within %s", timeout)
			}
			if err != nil {
				return nil, nil, err
			}
			return m, func(w io.Writer) { showMessage(w, *m) }, nil
		})})
	wait.Flags().StringVar(&wf.From, "from", "", "wait for mail from this address, or any address at this domain")
	wait.Flags().StringVar(&wf.SubjectContains, "subject", "", "wait for a subject containing this text")
	wait.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait")

	var remove bool
	label := &cobra.Command{Use: "label ID LABEL... [--remove]", Short: "Put labels on a message, or take them off with --remove",
		Args: cobra.MinimumNArgs(2),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			id, err := messageID(args[0])
			if err != nil {
				return nil, nil, err
			}
			for _, l := range args[1:] {
				if remove {
					err = api.RemoveLabel(ctx, id, l)
				} else {
					_, err = api.AddLabel(ctx, id, l)
				}
				if err != nil {
					return nil, nil, err
				}
			}
			m, err := api.Message(ctx, id)
			return m.MessageSummary, func(w io.Writer) { fields(w, "ID", args[0], "Labels", strings.Join(m.Labels, " ")) }, err
		})}
	label.Flags().BoolVar(&remove, "remove", false, "take the labels off instead")

	mail.AddCommand(ls, read, send, draft, reply, wait, label)
	return mail
}

func messageID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usageError{fmt.Sprintf("%q is not a message id (a number, as callsign mail ls shows)", s)}
	}
	return id, nil
}

// draftFlags are the flags of mail send and mail reply.
type draftFlags struct {
	to, cc, attach []string
	subject, body  string
}

func (d *draftFlags) add(cmd *cobra.Command, compose bool) {
	if compose {
		cmd.Flags().StringSliceVar(&d.to, "to", nil, "recipient addresses (repeat or separate with commas)")
		cmd.Flags().StringVar(&d.subject, "subject", "", "the subject")
	}
	cmd.Flags().StringSliceVar(&d.cc, "cc", nil, "copy addresses")
	cmd.Flags().StringVar(&d.body, "body", "-", "the text, or - to read it from standard input")
	cmd.Flags().StringSliceVar(&d.attach, "attach", nil, "files to attach (repeat for several)")
}

// draft reads the body and uploads the attachments.
func (c *cli) draft(ctx context.Context, api *client.Client, d draftFlags) (client.Draft, error) {
	body, err := c.readValue(d.body)
	if err != nil {
		return client.Draft{}, err
	}
	draft := client.Draft{To: d.to, Cc: d.cc, Content: &body}
	if d.subject != "" {
		draft.Subject = &d.subject
	}
	for _, path := range d.attach {
		content, err := os.ReadFile(path)
		if err != nil {
			return client.Draft{}, err
		}
		a, err := api.Upload(ctx, filepath.Base(path), mime.TypeByExtension(filepath.Ext(path)), content)
		if err != nil {
			return client.Draft{}, fmt.Errorf("attaching %s: %w", path, err)
		}
		draft.AttachmentUUIDs = append(draft.AttachmentUUIDs, a.UUID)
	}
	return draft, nil
}

func sent(w io.Writer, m client.Message) {
	status := ""
	if m.DeliveryStatus != nil {
		status = " (" + *m.DeliveryStatus + ")"
	}
	fmt.Fprintf(w, "Sent message %d to %s%s.\n", m.ID, m.ToEmail, status)
}

func drafted(w io.Writer, d client.EmailDraft) {
	what := "Drafted " + d.ID
	if d.AwaitingApproval {
		what += "; it waits for a person's approval"
	}
	if d.SendAt != nil {
		what += "; it leaves at " + *d.SendAt + " once sent"
	}
	fmt.Fprintln(w, what+".")
}

func showMessage(w io.Writer, m client.Message) {
	from := m.FromEmail
	if m.FromDisplayName != nil {
		from = *m.FromDisplayName + " <" + m.FromEmail + ">"
	}
	verdict := ""
	if m.Authentication != nil {
		verdict = m.Authentication.Verdict
	}
	fields(w, "ID", strconv.FormatInt(m.ID, 10), "From", from, "To", m.ToEmail, "Cc", strings.Join(m.Cc, ", "),
		"Subject", m.Subject, "Date", m.CreatedDT+" ("+ago(m.CreatedDT)+")", "Thread", m.ThreadID, "Verified", verdict,
		"Labels", strings.Join(m.Labels, " "))
	fmt.Fprintln(w)
	fmt.Fprintln(w, strings.TrimRight(m.Content, "\n"))
	if len(m.Attachments) > 0 {
		fmt.Fprintln(w)
		rows := make([][]string, len(m.Attachments))
		for i, a := range m.Attachments {
			rows[i] = []string{a.Filename, a.ContentType, strconv.FormatInt(a.Size, 10), a.UUID}
		}
		table(w, []string{"ATTACHMENT", "TYPE", "BYTES", "UUID"}, rows)
	}
}
