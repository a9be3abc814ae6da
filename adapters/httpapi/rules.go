package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

type ruleView struct {
	ID        string  `json:"id"`
	Identity  *string `json:"identity"` // null: every identity of the account
	Channel   string  `json:"channel"`
	Direction string  `json:"direction"`
	Action    string  `json:"action"`
	Pattern   string  `json:"pattern"`
	CreatedDT apiTime `json:"created_dt"`
}

func viewRule(r core.Rule) ruleView {
	return ruleView{ID: r.ID, Identity: optString(r.IdentityID), Channel: string(r.Channel), Direction: string(r.Direction),
		Action: string(r.Action), Pattern: r.Pattern, CreatedDT: apiTime(r.CreatedAt)}
}

func (s *server) listRules(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity := q.uuid("identity")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Rules.List(c.Request.Context(), principal(c), identity, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewRule), nil
}

func (s *server) createRule(c *gin.Context) (int, any, error) {
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	ri := app.RuleInput{Identity: in.uuid("identity"), Channel: in.text("channel"), Direction: in.text("direction"),
		Action: in.text("action"), Pattern: in.text("pattern")}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	r, err := s.app.Rules.Create(c.Request.Context(), principal(c), ri)
	return http.StatusCreated, viewRule(r), err
}

func (s *server) deleteRule(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "id", "Rule")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Rules.Delete(c.Request.Context(), principal(c), id)
}
