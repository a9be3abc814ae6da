package mcpserver

import (
	"context"
	"net/http"

	"github.com/callsign/callsign/client"
)

type whoamiIn struct {
	Scope
}

type whoamiOut struct {
	Account   string            `json:"account"`
	KeyType   string            `json:"key_type" jsonschema:"identity (this server acts for one identity) or management (the whole account)"`
	KeyPrefix string            `json:"key_prefix"`
	Identity  *client.Identity  `json:"identity" jsonschema:"the identity acted for: its name, email address (inbox) and phone number; null for a management key without identity"`
	CanSend   bool              `json:"can_send" jsonschema:"false: the send tools are refused; draft_email keeps a message for a person to approve"`
	Usage     map[string]int64  `json:"usage" jsonschema:"what the account uses of each quota: storage (bytes), identities, inboxes, phones, vault_items (per identity), sends_per_hour"`
	Quotas    map[string]*int64 `json:"quotas" jsonschema:"the quotas by the same names; null is unlimited"`
}

// contactFilters narrow list_contacts and search_contacts.
type contactFilters struct {
	Source string `json:"source,omitempty" jsonschema:"manual (added on purpose) or auto (someone who wrote to this identity)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many contacts (default 50, at most 200)"`
	Offset int    `json:"offset,omitempty" jsonschema:"how many to skip, for the next page"`
}

type listContactsIn struct {
	Scope
	contactFilters
	Query    string `json:"query,omitempty" jsonschema:"a search: see search_contacts"`
	Ordering string `json:"ordering,omitempty" jsonschema:"without query: -created_dt (the default): newest first; created_dt: oldest first"`
}

type searchContactsIn struct {
	Scope
	contactFilters
	Query string `json:"query" jsonschema:"search names, nickname, email and number as whole words (case and accents ignored, not stemmed): words (all must match), \"exact phrase\", -word, before:/after: YYYY-MM-DD (when added); hits come most relevant first"`
}

type listContactsOut struct {
	Count    int              `json:"count" jsonschema:"how many contacts match in all"`
	Contacts []client.Contact `json:"contacts" jsonschema:"newest first (or as ordering says), or for a search most relevant first with highlights"`
}

type listIdentitiesIn struct {
	Scope
	Limit  int `json:"limit,omitempty" jsonschema:"how many identities (default 50, at most 200)"`
	Offset int `json:"offset,omitempty" jsonschema:"how many to skip, for the next page"`
}

type listIdentitiesOut struct {
	Count      int               `json:"count" jsonschema:"how many identities there are in all"`
	Identities []client.Identity `json:"identities" jsonschema:"oldest first: each identity's uuid (the identity argument of the other tools), name, email address (inbox) and phone number"`
}

type contactsOut struct {
	Contacts []client.Contact `json:"contacts"`
}

type findContactIn struct {
	Scope
	Email       string `json:"email,omitempty" jsonschema:"the contact's email address (ignoring case)"`
	PhoneNumber string `json:"phone_number,omitempty" jsonschema:"the contact's number in E.164 form"`
	Query       string `json:"query,omitempty" jsonschema:"text to look for in emails, names and numbers"`
}

type addContactIn struct {
	Scope
	Email       string `json:"email,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	Nickname    string `json:"nickname,omitempty"`
	PhoneNumber string `json:"phone_number,omitempty" jsonschema:"E.164, such as +14155550100"`
}

// passwordSummary is a stored login without its secrets.
type passwordSummary struct {
	UUID      string `json:"uuid"`
	Domain    string `json:"domain"`
	Username  string `json:"username"`
	CreatedDT string `json:"created_dt"`
	UpdatedDT string `json:"updated_dt"`
}

func summarizePassword(p client.Password) passwordSummary {
	return passwordSummary{UUID: p.UUID, Domain: p.Domain, Username: p.Username, CreatedDT: p.CreatedDT, UpdatedDT: p.UpdatedDT}
}

type listPasswordsIn struct {
	Scope
	Domain string `json:"domain,omitempty" jsonschema:"only logins for this host and its subdomains"`
}

type listPasswordsOut struct {
	Passwords []passwordSummary `json:"passwords" jsonschema:"the logins, without their passwords: get_password reveals one"`
}

type getPasswordIn struct {
	Scope
	UUID   string `json:"uuid,omitempty" jsonschema:"the login's uuid"`
	Domain string `json:"domain,omitempty" jsonschema:"or the site it is for, when only one login matches"`
	Reveal bool   `json:"reveal,omitempty" jsonschema:"true to include the password and notes; leave false unless you are about to use them"`
}

type passwordOut struct {
	passwordSummary
	Password *string `json:"password" jsonschema:"the password, only with reveal: true"`
	Notes    *string `json:"notes" jsonschema:"the notes, only with reveal: true"`
}

type generatePasswordIn struct {
	Scope
	Length       int    `json:"length,omitempty" jsonschema:"8 to 128 characters (default 20)"`
	Lowercase    *bool  `json:"lowercase,omitempty"`
	Uppercase    *bool  `json:"uppercase,omitempty"`
	Digits       *bool  `json:"digits,omitempty"`
	Special      *bool  `json:"special,omitempty"`
	ExcludeChars string `json:"exclude_chars,omitempty" jsonschema:"characters never to use"`
}

type generatePasswordOut struct {
	Password string `json:"password" jsonschema:"a new random password; nothing is stored (save_password stores one)"`
}

type savePasswordIn struct {
	Scope
	Domain   string `json:"domain" jsonschema:"the site: a host name or URL"`
	Username string `json:"username,omitempty"`
	Password string `json:"password"`
	Notes    string `json:"notes,omitempty"`
}

type listSecretsIn struct {
	Scope
}

// secretSummary is a secret without its value.
type secretSummary struct {
	UUID      string `json:"uuid"`
	Key       string `json:"key" jsonschema:"the secret's name"`
	CreatedDT string `json:"created_dt"`
	UpdatedDT string `json:"updated_dt"`
}

func summarizeSecret(s client.Secret) secretSummary {
	return secretSummary{UUID: s.UUID, Key: s.Key, CreatedDT: s.CreatedDT, UpdatedDT: s.UpdatedDT}
}

type listSecretsOut struct {
	Secrets []secretSummary `json:"secrets" jsonschema:"names only: get_secret reveals a value"`
}

type getSecretIn struct {
	Scope
	Key    string `json:"key,omitempty" jsonschema:"the secret's name"`
	UUID   string `json:"uuid,omitempty" jsonschema:"or its uuid"`
	Reveal bool   `json:"reveal,omitempty" jsonschema:"true to include the value; leave false unless you are about to use it"`
}

type secretOut struct {
	secretSummary
	Value *string `json:"value" jsonschema:"the value, only with reveal: true"`
}

type setSecretIn struct {
	Scope
	Key   string `json:"key" jsonschema:"the secret's name"`
	Value string `json:"value"`
}

type setSecretOut struct {
	secretSummary
	Created bool `json:"created" jsonschema:"true for a new secret, false when an existing one got the new value"`
}

// errEmptySearch is the API's answer to an empty q, which the client
// would not send (it leaves an empty filter out).
var errEmptySearch = invalid("q", "Enter words or filters to search for.")

// invalid is the API's validation error for one field.
func invalid(field, msg string) error {
	return &client.Error{Status: http.StatusBadRequest, Fields: map[string][]string{field: {msg}}}
}

func (s *session) addDirectoryTools() {
	addTool(s, tool{name: "whoami", title: "Who am I", readOnly: true, identity: identityOptional,
		description: "Show who this server acts for: the identity's name, email address and phone number, the kind of key, and the account's usage against its quotas."},
		func(ctx context.Context, c *client.Client, in whoamiIn) (whoamiOut, error) {
			// Asked again: a management key may change the right during a
			// session, and usage moves.
			now, err := c.Whoami(ctx)
			if err != nil {
				return whoamiOut{}, err
			}
			out := whoamiOut{Account: s.who.Account, KeyType: s.who.KeyType, KeyPrefix: s.who.KeyPrefix, CanSend: now.CanSend,
				Usage: now.Usage, Quotas: now.Quotas}
			id := in.Identity
			if s.who.Identity != nil {
				id = *s.who.Identity
			}
			if id == "" {
				return out, nil
			}
			ident, err := c.Identity(ctx, id)
			out.Identity = &ident
			return out, err
		})

	addTool(s, tool{name: "list_identities", title: "List identities", readOnly: true, identity: identityNone,
		description: "List the identities this key reaches, with their uuid, name, email address and phone number: with a management key every identity of the account (the other tools take one's uuid as identity), with an identity key its own."},
		func(ctx context.Context, c *client.Client, in listIdentitiesIn) (listIdentitiesOut, error) {
			p, err := c.Identities(ctx, in.Limit, in.Offset)
			return listIdentitiesOut{Count: p.Count, Identities: p.Results}, err
		})

	addTool(s, tool{name: "list_contacts", title: "List or search contacts", readOnly: true,
		description: "List this identity's contacts, newest first: people added on purpose and people who wrote to it; or search them (query, as search_contacts), most relevant first."},
		func(ctx context.Context, c *client.Client, in listContactsIn) (listContactsOut, error) {
			ordering := in.Ordering
			if ordering == "" && in.Query == "" {
				ordering = newestFirst
			}
			return listContacts(ctx, c, in.Query, ordering, in.contactFilters)
		})
	addTool(s, tool{name: "search_contacts", title: "Search contacts", readOnly: true,
		description: "Search this identity's contacts by whole words of their names, nickname, email and number; hits most relevant first, each with highlights. find_contact finds any part of a word."},
		func(ctx context.Context, c *client.Client, in searchContactsIn) (listContactsOut, error) {
			if in.Query == "" {
				return listContactsOut{}, errEmptySearch
			}
			return listContacts(ctx, c, in.Query, "", in.contactFilters)
		})
	addTool(s, tool{name: "find_contact", title: "Find a contact", readOnly: true,
		description: "Find contacts by exact email address or phone number, or by any part of their email, names or number (query: smi finds Smith)."},
		func(ctx context.Context, c *client.Client, in findContactIn) (contactsOut, error) {
			if in.Query != "" {
				l, err := c.SearchContacts(ctx, in.Query)
				return contactsOut{Contacts: l}, err
			}
			ct, err := c.FindContact(ctx, in.Email, in.PhoneNumber)
			if client.NotFound(err) {
				return contactsOut{Contacts: []client.Contact{}}, nil
			}
			return contactsOut{Contacts: []client.Contact{ct}}, err
		})
	addTool(s, tool{name: "add_contact", title: "Add a contact",
		description: "Add a contact with an email address, a phone number, or both, and optional names."},
		func(ctx context.Context, c *client.Client, in addContactIn) (client.Contact, error) {
			return c.AddContact(ctx, client.ContactInput{Email: in.Email, DisplayName: in.DisplayName, Nickname: in.Nickname, PhoneNumber: in.PhoneNumber})
		})

	addTool(s, tool{name: "list_passwords", title: "List passwords", readOnly: true,
		description: "List the logins stored in this identity's vault (site and username, never the password)."},
		func(ctx context.Context, c *client.Client, in listPasswordsIn) (listPasswordsOut, error) {
			l, err := c.Passwords(ctx, in.Domain)
			out := listPasswordsOut{Passwords: make([]passwordSummary, len(l))}
			for i, p := range l {
				out.Passwords[i] = summarizePassword(p)
			}
			return out, err
		})
	addTool(s, tool{name: "get_password", title: "Get a password", readOnly: true,
		description: "Get one stored login by uuid or by site; the password and notes are included only with reveal: true."},
		func(ctx context.Context, c *client.Client, in getPasswordIn) (passwordOut, error) {
			p, err := findPassword(ctx, c, in)
			if err != nil {
				return passwordOut{}, err
			}
			out := passwordOut{passwordSummary: summarizePassword(p)}
			if in.Reveal {
				out.Password, out.Notes = &p.Password, &p.Notes
			}
			return out, nil
		})
	addTool(s, tool{name: "generate_password", title: "Generate a password", readOnly: true,
		description: "Generate a strong random password (nothing is stored; save_password stores a login)."},
		func(ctx context.Context, c *client.Client, in generatePasswordIn) (generatePasswordOut, error) {
			pw, err := c.GeneratePassword(ctx, client.PasswordSpec{Length: in.Length, Lowercase: in.Lowercase, Uppercase: in.Uppercase,
				Digits: in.Digits, Special: in.Special, ExcludeChars: in.ExcludeChars})
			return generatePasswordOut{Password: pw}, err
		})
	addTool(s, tool{name: "save_password", title: "Save a password",
		description: "Store a login (site, username, password, notes) in this identity's vault, encrypted."},
		func(ctx context.Context, c *client.Client, in savePasswordIn) (passwordSummary, error) {
			p, err := c.SavePassword(ctx, client.PasswordInput{Domain: in.Domain, Username: in.Username, Password: in.Password, Notes: in.Notes})
			return summarizePassword(p), err
		})

	addTool(s, tool{name: "list_secrets", title: "List secrets", readOnly: true,
		description: "List the names of the secrets (API tokens, keys) in this identity's vault, never their values."},
		func(ctx context.Context, c *client.Client, _ listSecretsIn) (listSecretsOut, error) {
			l, err := c.Secrets(ctx, "")
			out := listSecretsOut{Secrets: make([]secretSummary, len(l))}
			for i, sec := range l {
				out.Secrets[i] = summarizeSecret(sec)
			}
			return out, err
		})
	addTool(s, tool{name: "get_secret", title: "Get a secret", readOnly: true,
		description: "Get one secret by name (key) or uuid; its value is included only with reveal: true."},
		func(ctx context.Context, c *client.Client, in getSecretIn) (secretOut, error) {
			sec, err := findSecret(ctx, c, in.Key, in.UUID)
			if err != nil {
				return secretOut{}, err
			}
			out := secretOut{secretSummary: summarizeSecret(sec)}
			if in.Reveal {
				out.Value = &sec.Value
			}
			return out, nil
		})
	// Destructive: a new value replaces the one before, which is lost.
	addTool(s, tool{name: "set_secret", title: "Set a secret", destructive: true, idempotent: true,
		description: "Store a value under a name (key) in this identity's vault, encrypted: a new secret, or a new value for the one with that key."},
		func(ctx context.Context, c *client.Client, in setSecretIn) (setSecretOut, error) {
			sec, created, err := c.SetSecret(ctx, in.Key, in.Value)
			return setSecretOut{secretSummary: summarizeSecret(sec), Created: created}, err
		})
}

// listContacts is a page of contacts: a search when query is set, else
// as ordering says.
func listContacts(ctx context.Context, c *client.Client, query, ordering string, f contactFilters) (listContactsOut, error) {
	p, err := c.ContactPage(ctx, client.ContactFilter{Source: f.Source, Query: query, Ordering: ordering, Limit: f.Limit, Offset: f.Offset})
	return listContactsOut{Count: p.Count, Contacts: p.Results}, err
}

// findSecret is the secret a call names, by uuid or by key.
func findSecret(ctx context.Context, c *client.Client, key, uuid string) (client.Secret, error) {
	switch {
	case uuid != "":
		return c.Secret(ctx, uuid)
	case key != "":
		return c.SecretByKey(ctx, key)
	}
	return client.Secret{}, invalid("key", "Name the secret by key or uuid.")
}

// findPassword is the login a get_password call names: by uuid, or the one
// login for a site.
func findPassword(ctx context.Context, c *client.Client, in getPasswordIn) (client.Password, error) {
	switch {
	case in.UUID != "":
		return c.Password(ctx, in.UUID)
	case in.Domain != "":
		return c.PasswordForDomain(ctx, in.Domain)
	}
	return client.Password{}, invalid("uuid", "Name the login by uuid or domain.")
}
