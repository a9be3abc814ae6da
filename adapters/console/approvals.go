package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Approvals: the drafts written by keys without send rights, for a person
// to read and then send (the approval) or discard.

type approvalsData struct {
	Drafts []approvalRow
	More   bool
	Shown  int
}

// approvalsShown is how many drafts the page shows whole: each may hold
// two 1 MiB bodies, so the page is kept short (the list route gives
// previews only).
const approvalsShown = 10

type approvalRow struct {
	core.Draft
	IdentityName string
}

func (c *console) approvalsPage(v *visit) error {
	return c.showApprovals(v, "", http.StatusOK, nil)
}

func (c *console) showApprovals(v *visit, notice string, status int, problem error) error {
	ctx := v.r.Context()
	awaiting := true
	listed, _, err := c.app.Sending.Drafts(ctx, v.principal, "", &awaiting, ports.Page{Limit: approvalsShown + 1})
	if err != nil {
		return err
	}
	names, _, err := c.identityNames(ctx, v.principal)
	if err != nil {
		return err
	}
	data := approvalsData{More: len(listed) > approvalsShown, Shown: approvalsShown}
	for _, summary := range listed[:min(len(listed), approvalsShown)] {
		// The person approves what they read: the whole draft, not the list's preview.
		d, err := c.app.Sending.Draft(ctx, v.principal, summary.ID)
		if core.KindOf(err) == core.KindNotFound {
			continue // sent or discarded since the list was read
		}
		if err != nil {
			return err
		}
		data.Drafts = append(data.Drafts, approvalRow{Draft: d, IdentityName: names[d.IdentityID]})
	}
	pv := view{Title: "Approvals", Nav: "approvals", Notice: notice, Data: data}
	if problem != nil {
		status = c.withProblem(v, &pv, problem)
	}
	c.render(v, status, "approvals", pv)
	return nil
}

// approveDraft sends a draft: the person's approval.
func (c *console) approveDraft(v *visit) error {
	id, err := pathUUID(v, "id", "Draft")
	if err != nil {
		return err
	}
	// The version the person read: what they approve.
	seen, err := strconv.ParseInt(formValue(v, "seen"), 10, 64)
	if err != nil {
		return c.showApprovals(v, "", 0, core.Invalid("seen", "Approve a draft from the Approvals page."))
	}
	m, err := c.app.Sending.ApproveDraft(v.r.Context(), v.principal, id, time.UnixMicro(seen))
	if err != nil {
		return c.showApprovals(v, "", 0, err)
	}
	return c.showApprovals(v, "Approved: the message to "+strings.Join(append(m.To, m.Cc...), ", ")+" is on its way.", http.StatusOK, nil)
}

func (c *console) discardDraft(v *visit) error {
	id, err := pathUUID(v, "id", "Draft")
	if err != nil {
		return err
	}
	if err := c.app.Sending.DeleteDraft(v.r.Context(), v.principal, id); err != nil {
		return err
	}
	return redirect(v, root+"approvals/")
}

// identityNames are the account's identities (the first
// core.MaxUnpagedList+1, so a caller can tell there are more) and their
// names by id.
func (c *console) identityNames(ctx context.Context, p core.Principal) (map[string]string, []core.Identity, error) {
	identities, _, err := c.app.Identities.List(ctx, p, "", ports.Page{Limit: core.MaxUnpagedList + 1})
	names := map[string]string{}
	for _, ident := range identities {
		names[ident.ID] = ident.Name
	}
	return names, identities, err
}
