package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
)

func (s *server) listIdentities(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity := q.uuid("identity")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Identities.List(c.Request.Context(), principal(c), identity, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewIdentity), nil
}

// readIdentityInput reads the identity request body (spec §2).
func readIdentityInput(c *gin.Context) (app.IdentityInput, error) {
	in, err := readInputFor[identityView](c)
	if err != nil {
		return app.IdentityInput{}, err
	}
	ii := app.IdentityInput{Name: in.str("name"), EmailIdentifier: in.str("email_identifier"), Domain: in.str("domain")}
	if b := in.boolean("provision_phone"); b != nil {
		ii.ProvisionPhone = *b
	}
	ii.CountryCode = in.text("country_code")
	return ii, in.err()
}

func (s *server) createIdentity(c *gin.Context) (int, any, error) {
	ii, err := readIdentityInput(c)
	if err != nil {
		return 0, nil, err
	}
	ident, err := s.app.Identities.Create(c.Request.Context(), principal(c), ii)
	return http.StatusCreated, viewIdentity(ident), err
}

func (s *server) getIdentity(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Identity")
	if err != nil {
		return 0, nil, err
	}
	ident, err := s.app.Identities.Get(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewIdentity(ident), err
}

func (s *server) updateIdentity(replace bool) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathUUID(c, "uuid", "Identity")
		if err != nil {
			return 0, nil, err
		}
		ii, err := readIdentityInput(c)
		if err != nil {
			return 0, nil, err
		}
		ident, err := s.app.Identities.Update(c.Request.Context(), principal(c), id, ii, replace)
		return http.StatusOK, viewIdentity(ident), err
	}
}

// deleteIdentity takes confirm=true; without it the answer says what would go.
func (s *server) deleteIdentity(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Identity")
	if err != nil {
		return 0, nil, err
	}
	q := newStrictQuery(c)
	confirm := q.boolean("confirm")
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Identities.Delete(c.Request.Context(), principal(c), id, confirm != nil && *confirm)
}
