package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

type passwordView struct {
	UUID      string  `json:"uuid"`
	Identity  string  `json:"identity"`
	Domain    string  `json:"domain"`
	Username  string  `json:"username"`
	Password  string  `json:"password"`
	Notes     string  `json:"notes"`
	HasTOTP   bool    `json:"has_totp"` // the key itself is never shown
	CreatedDT apiTime `json:"created_dt"`
	UpdatedDT apiTime `json:"updated_dt"`
}

func viewPassword(e core.PasswordEntry) passwordView {
	return passwordView{UUID: e.ID, Identity: e.IdentityID, Domain: e.Domain, Username: e.Username, Password: e.Password,
		Notes: e.Notes, HasTOTP: e.TOTP != "", CreatedDT: apiTime(e.CreatedAt), UpdatedDT: apiTime(e.UpdatedAt)}
}

type totpView struct {
	Code      string `json:"code"`
	Period    int    `json:"period"`
	Digits    int    `json:"digits"`
	ExpiresIn int    `json:"expires_in"`
}

type secretView struct {
	UUID      string  `json:"uuid"`
	Identity  string  `json:"identity"`
	Key       string  `json:"key"`
	Value     string  `json:"value"`
	CreatedDT apiTime `json:"created_dt"`
	UpdatedDT apiTime `json:"updated_dt"`
}

func viewSecret(s core.Secret) secretView {
	return secretView{UUID: s.ID, Identity: s.IdentityID, Key: s.Key, Value: s.Value, CreatedDT: apiTime(s.CreatedAt), UpdatedDT: apiTime(s.UpdatedAt)}
}

// identityParam reads ?identity= alone, for routes with no other query.
func identityParam(c *gin.Context) (string, error) {
	q := newQuery(c)
	id := q.uuid("identity")
	return id, q.err()
}

func readPasswordInput(c *gin.Context) (app.PasswordInput, error) {
	in, err := readInputFor[passwordView](c)
	if err != nil {
		return app.PasswordInput{}, err
	}
	pi := app.PasswordInput{Domain: in.str("domain"), Username: in.str("username"), Password: in.str("password"), Notes: in.str("notes"), TOTP: in.str("totp")}
	return pi, in.err()
}

func (s *server) listPasswords(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, domain := q.uuid("identity"), q.str("domain")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Vault.ListPasswords(c.Request.Context(), principal(c), identity, domain, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewPassword), nil
}

func (s *server) createPassword(c *gin.Context) (int, any, error) {
	identity, err := identityParam(c)
	if err != nil {
		return 0, nil, err
	}
	pi, err := readPasswordInput(c)
	if err != nil {
		return 0, nil, err
	}
	e, err := s.app.Vault.CreatePassword(c.Request.Context(), principal(c), identity, pi)
	return http.StatusCreated, viewPassword(e), err
}

func (s *server) getPassword(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Password")
	if err != nil {
		return 0, nil, err
	}
	e, err := s.app.Vault.GetPassword(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewPassword(e), err
}

func (s *server) updatePassword(replace bool) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathUUID(c, "uuid", "Password")
		if err != nil {
			return 0, nil, err
		}
		pi, err := readPasswordInput(c)
		if err != nil {
			return 0, nil, err
		}
		e, err := s.app.Vault.UpdatePassword(c.Request.Context(), principal(c), id, pi, replace)
		return http.StatusOK, viewPassword(e), err
	}
}

func (s *server) passwordTOTP(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Password")
	if err != nil {
		return 0, nil, err
	}
	code, err := s.app.Vault.TOTP(c.Request.Context(), principal(c), id)
	return http.StatusOK, totpView{Code: code.Code, Period: code.Period, Digits: code.Digits, ExpiresIn: code.ExpiresIn}, err
}

func (s *server) deletePassword(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Password")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Vault.DeletePassword(c.Request.Context(), principal(c), id)
}

func (s *server) generatePassword(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	spec := core.DefaultPasswordSpec
	spec.Length = int(q.integer("length", int64(spec.Length), -1<<31, 1<<31-1))
	for dst, name := range map[*bool]string{&spec.Lowercase: "lowercase", &spec.Uppercase: "uppercase", &spec.Digits: "digits", &spec.Special: "special"} {
		if b := q.boolean(name); b != nil {
			*dst = *b
		}
	}
	spec.ExcludeChars = q.raw("exclude_chars") // spaces may be meant: not trimmed
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	pw, err := s.app.Vault.GeneratePassword(spec)
	return http.StatusOK, gin.H{"password": pw}, err
}

func readSecretInput(c *gin.Context) (app.SecretInput, error) {
	in, err := readInputFor[secretView](c)
	if err != nil {
		return app.SecretInput{}, err
	}
	si := app.SecretInput{Key: in.str("key"), Value: in.str("value")}
	return si, in.err()
}

func (s *server) listSecrets(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, key := q.uuid("identity"), q.raw("key")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Vault.ListSecrets(c.Request.Context(), principal(c), identity, key, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewSecret), nil
}

func (s *server) createSecret(c *gin.Context) (int, any, error) {
	identity, err := identityParam(c)
	if err != nil {
		return 0, nil, err
	}
	si, err := readSecretInput(c)
	if err != nil {
		return 0, nil, err
	}
	sec, err := s.app.Vault.CreateSecret(c.Request.Context(), principal(c), identity, si)
	return http.StatusCreated, viewSecret(sec), err
}

func (s *server) getSecret(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Secret")
	if err != nil {
		return 0, nil, err
	}
	sec, err := s.app.Vault.GetSecret(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewSecret(sec), err
}

func (s *server) updateSecret(replace bool) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathUUID(c, "uuid", "Secret")
		if err != nil {
			return 0, nil, err
		}
		si, err := readSecretInput(c)
		if err != nil {
			return 0, nil, err
		}
		sec, err := s.app.Vault.UpdateSecret(c.Request.Context(), principal(c), id, si, replace)
		return http.StatusOK, viewSecret(sec), err
	}
}

func (s *server) deleteSecret(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Secret")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Vault.DeleteSecret(c.Request.Context(), principal(c), id)
}
