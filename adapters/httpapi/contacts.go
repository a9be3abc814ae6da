package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type contactView struct {
	UUID        string `json:"uuid"`
	Identity    string `json:"identity"`
	Email       string `json:"email"`
	DisplayName string `json:"display_name"`
	Nickname    string `json:"nickname"`
	PhoneNumber string `json:"phone_number"`
	Source      string `json:"source"`
	// Highlights are a search hit's snippets; empty outside a search (q).
	Highlights []string `json:"highlights"`
	CreatedDT  apiTime  `json:"created_dt"`
	UpdatedDT  apiTime  `json:"updated_dt"`
}

func viewContact(c core.Contact) contactView {
	return contactView{UUID: c.ID, Identity: c.IdentityID, Email: c.Email, DisplayName: c.DisplayName, Nickname: c.Nickname,
		PhoneNumber: c.PhoneNumber, Source: string(c.Source), Highlights: nonNil(c.Highlights), CreatedDT: apiTime(c.CreatedAt),
		UpdatedDT: apiTime(c.UpdatedAt)}
}

func readContactInput(c *gin.Context) (app.ContactInput, error) {
	in, err := readInputFor[contactView](c)
	if err != nil {
		return app.ContactInput{}, err
	}
	ci := app.ContactInput{Email: in.str("email"), DisplayName: in.str("display_name"), Nickname: in.str("nickname"), PhoneNumber: in.str("phone_number")}
	return ci, in.err()
}

func (s *server) listContacts(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, search := q.uuid("identity"), q.search(core.SearchContacts)
	var source core.ContactSource
	if v := q.str("source"); v != "" {
		var ok bool
		if source, ok = core.ParseContactSource(v); !ok {
			q.problems.Add("source", "%q is not a valid choice; use auto or manual.", v)
		}
	}
	newest := q.unrankedOrdering(search, false)
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Contacts.List(c.Request.Context(), principal(c), identity, ports.ContactFilter{Source: source, Search: search,
		NewestFirst: newest, Page: lq.page})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewContact), nil
}

func (s *server) createContact(c *gin.Context) (int, any, error) {
	identity, err := identityParam(c)
	if err != nil {
		return 0, nil, err
	}
	ci, err := readContactInput(c)
	if err != nil {
		return 0, nil, err
	}
	ct, err := s.app.Contacts.Create(c.Request.Context(), principal(c), identity, ci)
	return http.StatusCreated, viewContact(ct), err
}

func (s *server) findContact(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, email, phone := q.uuid("identity"), q.email("email"), q.phone("phone_number")
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	ct, err := s.app.Contacts.Find(c.Request.Context(), principal(c), identity, email, phone)
	return http.StatusOK, viewContact(ct), err
}

func (s *server) searchContacts(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, text := q.uuid("identity"), q.str("q")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Contacts.Search(c.Request.Context(), principal(c), identity, text, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewContact), nil
}

func (s *server) getContact(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Contact")
	if err != nil {
		return 0, nil, err
	}
	ct, err := s.app.Contacts.Get(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewContact(ct), err
}

func (s *server) updateContact(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Contact")
	if err != nil {
		return 0, nil, err
	}
	ci, err := readContactInput(c)
	if err != nil {
		return 0, nil, err
	}
	ct, err := s.app.Contacts.Update(c.Request.Context(), principal(c), id, ci)
	return http.StatusOK, viewContact(ct), err
}

func (s *server) deleteContact(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Contact")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Contacts.Delete(c.Request.Context(), principal(c), id)
}
