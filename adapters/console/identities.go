package console

import (
	"net/http"
	"strings"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type identityRow struct {
	core.Identity
	UnreadMail, UnreadTexts int
}

type identitiesData struct {
	Identities []identityRow
	Pager      pager
	Form       identityForm
}

type identityForm struct {
	Name, EmailIdentifier, Domain, CountryCode string
	ProvisionPhone                             bool
}

// identitiesPage is the console's home: the account's identities with
// their unread mail and texts, and the form that makes one.
func (c *console) identitiesPage(v *visit) error {
	return c.showIdentities(v, identityForm{CountryCode: "US"}, nil)
}

func (c *console) showIdentities(v *visit, form identityForm, problem error) error {
	ctx := v.r.Context()
	n := pageNumber(v.r)
	list, total, err := c.app.Identities.List(ctx, v.principal, "", ports.Page{Limit: pageSize, Offset: (n - 1) * pageSize, Count: true})
	if err != nil {
		return err
	}
	rows := make([]identityRow, len(list))
	yes := true
	for i, ident := range list {
		rows[i].Identity = ident
		// Bounded counts: a page never reads more than unreadCap threads
		// or conversations per identity.
		threads, _, err := c.app.Reading.Threads(ctx, v.principal, ident.ID, ports.ThreadFilter{HasUnread: &yes, Page: ports.Page{Limit: unreadCap}})
		if err != nil {
			return err
		}
		convs, _, err := c.app.SMS.Conversations(ctx, v.principal, ident.ID, &yes, "", ports.Page{Limit: unreadCap})
		if err != nil {
			return err
		}
		rows[i].UnreadMail, rows[i].UnreadTexts = len(threads), len(convs)
	}
	pv := view{Title: "Identities", Nav: "identities", Data: identitiesData{Identities: rows, Pager: newPager(v.r, n, total), Form: form}}
	c.render(v, c.withProblem(v, &pv, problem), "identities", pv)
	return nil
}

func (c *console) createIdentity(v *visit) error {
	form := identityForm{Name: formValue(v, "name"), EmailIdentifier: formValue(v, "email_identifier"),
		Domain: formValue(v, "domain"), CountryCode: formValue(v, "country_code"), ProvisionPhone: v.r.PostFormValue("provision_phone") != ""}
	in := app.IdentityInput{Name: optional(v, "name"), EmailIdentifier: optional(v, "email_identifier"), Domain: optional(v, "domain"),
		ProvisionPhone: form.ProvisionPhone, CountryCode: form.CountryCode}
	ident, err := c.app.Identities.Create(v.r.Context(), v.principal, in)
	if err != nil {
		return c.showIdentities(v, form, err)
	}
	return redirect(v, identityPath(ident.ID)+"mail/")
}

func identityPath(id string) string { return root + "identities/" + id + "/" }

// identity reads the identity a page is about; another account's is not found.
func (c *console) identity(v *visit) (core.Identity, error) {
	id, err := pathUUID(v, "id", "Identity")
	if err != nil {
		return core.Identity{}, err
	}
	return c.app.Identities.Get(v.r.Context(), v.principal, id)
}

type deleteData struct {
	Warning string
}

// confirmDeleteIdentity asks before deleting, saying what goes with it.
func (c *console) confirmDeleteIdentity(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	// Without confirmation the app answers with what would be deleted.
	warning := c.app.Identities.Delete(v.r.Context(), v.principal, ident.ID, false)
	if core.KindOf(warning) != core.KindInvalid {
		return warning
	}
	c.render(v, http.StatusOK, "delete-identity", view{Title: "Delete " + ident.Name, Identity: &ident,
		Data: deleteData{Warning: strings.TrimSuffix(warning.(*core.Error).Message, " Send confirm=true to go ahead.")}})
	return nil
}

func (c *console) deleteIdentity(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	if v.r.PostFormValue("confirm") != "yes" {
		return redirect(v, identityPath(ident.ID)+"delete/")
	}
	if err := c.app.Identities.Delete(v.r.Context(), v.principal, ident.ID, true); err != nil {
		return err
	}
	return redirect(v, root)
}
