package console

import (
	"net/http"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Passwords and secrets: names and metadata are listed; a value is shown
// only after the account's password is typed again, every time
// (app.Vault.RevealPassword and RevealSecret log each reveal).

type vaultData struct {
	Passwords []core.PasswordEntry
	Secrets   []core.Secret
	// More is set when either list has more than a page.
	More     bool
	Password core.PasswordEntry // the add form, shown again after a mistake
	Secret   core.Secret
}

func (c *console) vaultPage(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	return c.showVault(v, ident, vaultData{}, nil)
}

func (c *console) showVault(v *visit, ident core.Identity, data vaultData, problem error) error {
	ctx, page := v.r.Context(), ports.Page{Limit: core.MaxUnpagedList + 1}
	passwords, _, err := c.app.Vault.ListPasswords(ctx, v.principal, ident.ID, "", page)
	if err != nil {
		return err
	}
	secrets, _, err := c.app.Vault.ListSecrets(ctx, v.principal, ident.ID, "", page)
	if err != nil {
		return err
	}
	data.More = len(passwords) > core.MaxUnpagedList || len(secrets) > core.MaxUnpagedList
	// The list shows no value: the values were opened by the app, and are
	// dropped here, before the template could see them.
	for i := range passwords[:min(len(passwords), core.MaxUnpagedList)] {
		passwords[i].Password, passwords[i].Notes = "", ""
	}
	for i := range secrets[:min(len(secrets), core.MaxUnpagedList)] {
		secrets[i].Value = ""
	}
	data.Passwords, data.Secrets = passwords[:min(len(passwords), core.MaxUnpagedList)], secrets[:min(len(secrets), core.MaxUnpagedList)]
	pv := view{Title: "Passwords and secrets", Identity: &ident, Section: "vault", Data: data}
	c.render(v, c.withProblem(v, &pv, problem), "vault", pv)
	return nil
}

func (c *console) createPassword(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	shown := core.PasswordEntry{Domain: formValue(v, "domain"), Username: formValue(v, "username")}
	password, notes := v.r.PostFormValue("password"), v.r.PostFormValue("notes")
	in := app.PasswordInput{Domain: &shown.Domain, Username: &shown.Username, Password: &password, Notes: &notes}
	if _, err := c.app.Vault.CreatePassword(v.r.Context(), v.principal, ident.ID, in); err != nil {
		return c.showVault(v, ident, vaultData{Password: shown}, err)
	}
	return redirect(v, identityPath(ident.ID)+"vault/")
}

func (c *console) createSecret(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	shown := core.Secret{Key: formValue(v, "key")}
	value := v.r.PostFormValue("value")
	if _, err := c.app.Vault.CreateSecret(v.r.Context(), v.principal, ident.ID, app.SecretInput{Key: &shown.Key, Value: &value}); err != nil {
		return c.showVault(v, ident, vaultData{Secret: shown}, err)
	}
	return redirect(v, identityPath(ident.ID)+"vault/")
}

// revealData is the reveal page: the entry's name, and its value once the
// account's password was right.
type revealData struct {
	Kind     string // password or secret
	ID       string
	Name     string // the domain and username, or the key
	Value    string
	Revealed bool
}

// vaultEntry is a password or secret of the path, with its identity.
func (c *console) vaultEntry(v *visit, kind string) (revealData, core.Identity, error) {
	what := map[string]string{"password": "Password", "secret": "Secret"}[kind]
	id, err := pathUUID(v, "id", what)
	if err != nil {
		return revealData{}, core.Identity{}, err
	}
	data, identityID := revealData{Kind: kind, ID: id}, ""
	if kind == "password" {
		e, err := c.app.Vault.GetPassword(v.r.Context(), v.principal, id)
		if err != nil {
			return data, core.Identity{}, err
		}
		data.Name, identityID = e.Username+" at "+e.Domain, e.IdentityID
	} else {
		s, err := c.app.Vault.GetSecret(v.r.Context(), v.principal, id)
		if err != nil {
			return data, core.Identity{}, err
		}
		data.Name, identityID = s.Key, s.IdentityID
	}
	ident, err := c.app.Identities.Get(v.r.Context(), v.principal, identityID)
	return data, ident, err
}

func (c *console) revealPage(kind string) handler {
	return func(v *visit) error {
		data, ident, err := c.vaultEntry(v, kind)
		if err != nil {
			return err
		}
		c.render(v, http.StatusOK, "reveal", view{Title: "Show " + kind, Identity: &ident, Section: "vault", Data: data})
		return nil
	}
}

// reveal shows a value to whoever typed the account's password again.
// Wrong passwords count against the account and the client's address, as
// sign-in's do.
func (c *console) reveal(kind string) handler {
	return func(v *visit) error {
		data, ident, err := c.vaultEntry(v, kind)
		if err != nil {
			return err
		}
		pv := view{Title: "Show " + kind, Identity: &ident, Section: "vault", Data: &data}
		if err := c.host.GuessAllowed(v.r, v.account.ID); err != nil {
			c.render(v, c.withProblem(v, &pv, err), "reveal", pv)
			return nil
		}
		password := v.r.PostFormValue("password")
		if kind == "password" {
			var e core.PasswordEntry
			e, err = c.app.Vault.RevealPassword(v.r.Context(), v.principal, data.ID, password)
			data.Value = e.Password
		} else {
			var s core.Secret
			s, err = c.app.Vault.RevealSecret(v.r.Context(), v.principal, data.ID, password)
			data.Value = s.Value
		}
		if core.KindOf(err) == core.KindUnauthorized {
			c.host.WrongGuess(v.r, v.account.ID)
		}
		data.Revealed = err == nil
		c.render(v, c.withProblem(v, &pv, err), "reveal", pv)
		return nil
	}
}

func (c *console) deleteVaultEntry(kind string) handler {
	return func(v *visit) error {
		data, ident, err := c.vaultEntry(v, kind)
		if err != nil {
			return err
		}
		if kind == "password" {
			err = c.app.Vault.DeletePassword(v.r.Context(), v.principal, data.ID)
		} else {
			err = c.app.Vault.DeleteSecret(v.r.Context(), v.principal, data.ID)
		}
		if err != nil {
			return err
		}
		return redirect(v, identityPath(ident.ID)+"vault/")
	}
}
