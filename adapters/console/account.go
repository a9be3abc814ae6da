package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// API keys: create (the key is shown once, on the answer to the form) and
// revoke.

type keysData struct {
	Management, Identity []keyRow
	Identities           []core.Identity
	More                 bool
	New                  *core.NewKey
	Form                 app.KeyInput
	// DraftsOnly is the form's choice of a key without send rights.
	DraftsOnly bool
}

type keyRow struct {
	core.APIKey
	IdentityName string
}

func (c *console) keysPage(v *visit) error { return c.showKeys(v, keysData{}, http.StatusOK, nil) }

func (c *console) showKeys(v *visit, data keysData, status int, problem error) error {
	ctx, page := v.r.Context(), ports.Page{Limit: core.MaxUnpagedList + 1}
	names, identities, err := c.identityNames(ctx, v.principal)
	if err != nil {
		return err
	}
	for _, t := range []core.KeyType{core.KeyManagement, core.KeyIdentity} {
		keys, _, err := c.app.Auth.ListKeys(ctx, v.principal, t, "", page)
		if err != nil {
			return err
		}
		data.More = data.More || len(keys) > core.MaxUnpagedList
		rows := make([]keyRow, min(len(keys), core.MaxUnpagedList))
		for i := range rows {
			rows[i] = keyRow{APIKey: keys[i], IdentityName: names[keys[i].IdentityID]}
		}
		if t == core.KeyManagement {
			data.Management = rows
		} else {
			data.Identity = rows
		}
	}
	data.Identities = identities[:min(len(identities), core.MaxUnpagedList)]
	pv := view{Title: "API keys", Nav: "keys", Data: data}
	if problem != nil {
		status = c.withProblem(v, &pv, problem)
	}
	c.render(v, status, "keys", pv)
	return nil
}

func (c *console) createKey(v *visit) error {
	in := app.KeyInput{Name: formValue(v, "name"), Identity: formValue(v, "identity"), CanProvision: v.r.PostFormValue("can_provision") != ""}
	draftsOnly := v.r.PostFormValue("drafts_only") != ""
	if draftsOnly {
		in.CanSend = new(bool) // false: its mail waits for approval
	}
	var k core.NewKey
	var err error
	if in.Identity == "" {
		k, err = c.app.Auth.CreateManagementKey(v.r.Context(), v.principal, in)
	} else {
		k, err = c.app.Auth.CreateIdentityKey(v.r.Context(), v.principal, in)
	}
	if err != nil {
		return c.showKeys(v, keysData{Form: in, DraftsOnly: draftsOnly}, 0, err)
	}
	// The answer to the form is the one place the key is ever shown.
	return c.showKeys(v, keysData{New: &k}, http.StatusCreated, nil)
}

func (c *console) revokeKey(v *visit) error {
	t := core.KeyType(v.r.PathValue("type"))
	if t != core.KeyManagement && t != core.KeyIdentity {
		return errNoPage
	}
	id, err := pathID(v, "id", "Key")
	if err != nil {
		return err
	}
	if err := c.app.Auth.DeleteKey(v.r.Context(), v.principal, t, id); err != nil {
		return err
	}
	return redirect(v, root+"keys/")
}

// Custom domains: add, see the DNS records to publish and their state,
// check now, remove.

type domainsData struct {
	Domains []core.Domain
	Name    string
}

func (c *console) domainsPage(v *visit) error { return c.showDomains(v, "", nil) }

func (c *console) showDomains(v *visit, name string, problem error) error {
	list, err := c.app.Domains.List(v.r.Context(), v.principal)
	if err != nil {
		return err
	}
	pv := view{Title: "Domains", Nav: "domains", Data: domainsData{Domains: list, Name: name}}
	c.render(v, c.withProblem(v, &pv, problem), "domains", pv)
	return nil
}

func domainPath(name string) string { return root + "domains/" + url.PathEscape(name) + "/" }

func (c *console) createDomain(v *visit) error {
	name := formValue(v, "name")
	d, err := c.app.Domains.Create(v.r.Context(), v.principal, name)
	if err != nil {
		return c.showDomains(v, name, err)
	}
	return redirect(v, domainPath(d.Name))
}

type domainData struct {
	Domain  core.Domain
	Records []core.DNSRecord
}

func (c *console) domainPage(v *visit) error {
	d, err := c.app.Domains.Get(v.r.Context(), v.principal, v.r.PathValue("name"))
	if err != nil {
		return err
	}
	c.render(v, http.StatusOK, "domain", view{Title: d.Name, Nav: "domains", Data: domainData{Domain: d, Records: c.app.Domains.Records(d)}})
	return nil
}

func (c *console) verifyDomain(v *visit) error {
	d, err := c.app.Domains.Verify(v.r.Context(), v.principal, v.r.PathValue("name"))
	if err != nil {
		return err
	}
	return redirect(v, domainPath(d.Name))
}

func (c *console) deleteDomain(v *visit) error {
	if err := c.app.Domains.Delete(v.r.Context(), v.principal, v.r.PathValue("name")); err != nil {
		return err
	}
	return redirect(v, root+"domains/")
}

// keyRevokePath is where a key is revoked.
func keyRevokePath(k core.APIKey) string {
	return root + "keys/" + string(k.Type) + "/" + strconv.FormatInt(k.ID, 10) + "/revoke/"
}
