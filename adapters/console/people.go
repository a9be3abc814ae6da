package console

import (
	"net/http"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Contacts: list, add, edit, delete.

type contactsData struct {
	Contacts []core.Contact
	Pager    pager
	Form     core.Contact
}

func (c *console) contactsPage(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	return c.showContacts(v, ident, core.Contact{}, nil)
}

func (c *console) showContacts(v *visit, ident core.Identity, form core.Contact, problem error) error {
	n := pageNumber(v.r)
	list, total, err := c.app.Contacts.List(v.r.Context(), v.principal, ident.ID,
		ports.ContactFilter{Page: ports.Page{Limit: pageSize, Offset: (n - 1) * pageSize, Count: true}})
	if err != nil {
		return err
	}
	pv := view{Title: "Contacts", Identity: &ident, Section: "contacts", Data: contactsData{Contacts: list, Pager: newPager(v.r, n, total), Form: form}}
	c.render(v, c.withProblem(v, &pv, problem), "contacts", pv)
	return nil
}

// contactForm reads the contact form into the app's input and a contact
// to show again.
func contactForm(v *visit) (app.ContactInput, core.Contact) {
	shown := core.Contact{Email: formValue(v, "email"), DisplayName: formValue(v, "display_name"),
		Nickname: formValue(v, "nickname"), PhoneNumber: formValue(v, "phone_number")}
	return app.ContactInput{Email: &shown.Email, DisplayName: &shown.DisplayName, Nickname: &shown.Nickname, PhoneNumber: &shown.PhoneNumber}, shown
}

func (c *console) createContact(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	in, shown := contactForm(v)
	if _, err := c.app.Contacts.Create(v.r.Context(), v.principal, ident.ID, in); err != nil {
		return c.showContacts(v, ident, shown, err)
	}
	return redirect(v, identityPath(ident.ID)+"contacts/")
}

// contact reads the contact a page is about, and its identity.
func (c *console) contact(v *visit) (core.Contact, core.Identity, error) {
	id, err := pathUUID(v, "id", "Contact")
	if err != nil {
		return core.Contact{}, core.Identity{}, err
	}
	ct, err := c.app.Contacts.Get(v.r.Context(), v.principal, id)
	if err != nil {
		return core.Contact{}, core.Identity{}, err
	}
	ident, err := c.app.Identities.Get(v.r.Context(), v.principal, ct.IdentityID)
	return ct, ident, err
}

func (c *console) contactPage(v *visit) error {
	ct, ident, err := c.contact(v)
	if err != nil {
		return err
	}
	c.render(v, http.StatusOK, "contact", view{Title: "Edit contact", Identity: &ident, Section: "contacts", Data: ct})
	return nil
}

func (c *console) updateContact(v *visit) error {
	ct, ident, err := c.contact(v)
	if err != nil {
		return err
	}
	in, shown := contactForm(v)
	if _, err := c.app.Contacts.Update(v.r.Context(), v.principal, ct.ID, in); err != nil {
		shown.ID = ct.ID
		pv := view{Title: "Edit contact", Identity: &ident, Section: "contacts", Data: shown}
		c.render(v, c.withProblem(v, &pv, err), "contact", pv)
		return nil
	}
	return redirect(v, identityPath(ident.ID)+"contacts/")
}

func (c *console) deleteContact(v *visit) error {
	ct, ident, err := c.contact(v)
	if err != nil {
		return err
	}
	if err := c.app.Contacts.Delete(v.r.Context(), v.principal, ct.ID); err != nil {
		return err
	}
	return redirect(v, identityPath(ident.ID)+"contacts/")
}
