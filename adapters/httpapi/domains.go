package httpapi

import (
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/core"
)

// domainView is one domain. Platform domains carry nulls and no records;
// "domain" repeats "name" for clients of the spec's list.
type domainView struct {
	Domain        string       `json:"domain"`
	Name          string       `json:"name"`
	Type          string       `json:"type"`
	Status        string       `json:"status"`
	Reason        *string      `json:"reason"`
	DKIMSelector  *string      `json:"dkim_selector"`
	Records       []recordView `json:"records"`
	CreatedDT     *apiTime     `json:"created_dt"`
	VerifiedDT    *apiTime     `json:"verified_dt"`
	LastCheckedDT *apiTime     `json:"last_checked_dt"`
	// MTASTSMode and MTASTSPolicyURL are null for platform domains; the
	// URL is null while no policy can be served (no MX host).
	MTASTSMode      *string `json:"mta_sts_mode"`
	MTASTSPolicyURL *string `json:"mta_sts_policy_url"`
}

type recordView struct {
	Purpose  string  `json:"purpose"`
	Type     string  `json:"type"`
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Priority *int    `json:"priority"`
	Selector *string `json:"selector"`
	Status   string  `json:"status"`
}

func (s *server) viewDomain(d core.Domain) domainView {
	v := domainView{Domain: d.Name, Name: d.Name, Type: string(d.Type), Status: string(d.Status), Records: []recordView{}}
	if d.Type != core.DomainCustom {
		return v
	}
	if k, ok := d.ActiveKey(); ok {
		v.DKIMSelector = &k.Selector
	}
	v.Reason = optString(d.Reason)
	mode := string(d.STSMode())
	v.MTASTSMode = &mode
	if s.app.Domains.ServesMTASTS(d) {
		url := "https://" + core.MTASTSPolicyHost(d.Name) + core.MTASTSPolicyPath
		v.MTASTSPolicyURL = &url
	}
	v.CreatedDT, v.VerifiedDT, v.LastCheckedDT = optTime(&d.CreatedAt), optTime(&d.VerifiedAt), optTime(&d.LastCheckedAt)
	for _, r := range s.app.Domains.Records(d) {
		rv := recordView{Purpose: string(r.Purpose), Type: r.Type, Name: r.Name, Value: r.Value, Selector: optString(r.Selector), Status: string(r.Status)}
		if r.Type == "MX" {
			rv.Priority = &r.Priority
		}
		v.Records = append(v.Records, rv)
	}
	return v
}

func (s *server) listDomains(c *gin.Context) (int, any, error) {
	if err := newStrictQuery(c).err(); err != nil {
		return 0, nil, err
	}
	list, err := s.app.Domains.List(c.Request.Context(), principal(c))
	return http.StatusOK, viewAll(list, s.viewDomain), err
}

func (s *server) createDomain(c *gin.Context) (int, any, error) {
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	name := in.str("name")
	if name == nil {
		in.problems.Add("name", "This field is required.")
		name = new(string)
	}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	d, err := s.app.Domains.Create(c.Request.Context(), principal(c), *name)
	return http.StatusCreated, s.viewDomain(d), err
}

// domainAction answers a domain named in the path after act.
func (s *server) domainAction(act func(*gin.Context, core.Principal, string) (core.Domain, error)) handler {
	return func(c *gin.Context) (int, any, error) {
		d, err := act(c, principal(c), c.Param("name"))
		return http.StatusOK, s.viewDomain(d), err
	}
}

func (s *server) getDomain(c *gin.Context, p core.Principal, name string) (core.Domain, error) {
	return s.app.Domains.Get(c.Request.Context(), p, name)
}

func (s *server) verifyDomain(c *gin.Context, p core.Principal, name string) (core.Domain, error) {
	return s.app.Domains.Verify(c.Request.Context(), p, name)
}

func (s *server) rotateDKIM(c *gin.Context, p core.Principal, name string) (core.Domain, error) {
	return s.app.Domains.RotateDKIM(c.Request.Context(), p, name)
}

// updateDomain changes what a person may choose about a domain: the mode
// of its MTA-STS policy.
func (s *server) updateDomain(c *gin.Context, p core.Principal, name string) (core.Domain, error) {
	in, err := readInput(c)
	if err != nil {
		return core.Domain{}, err
	}
	mode := in.str("mta_sts_mode")
	if mode == nil {
		in.problems.Add("mta_sts_mode", "This field is required.")
	}
	if err := in.err(); err != nil {
		return core.Domain{}, err
	}
	return s.app.Domains.SetMTASTSMode(c.Request.Context(), p, name, *mode)
}

// mtaSTSPolicy serves a custom domain's MTA-STS policy (RFC 8461 §3.3) to
// the senders that ask https://mta-sts.<domain>/.well-known/mta-sts.txt.
func (s *server) mtaSTSPolicy(c *gin.Context) {
	host := c.Request.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	policy, err := s.app.Domains.MTASTSPolicy(c.Request.Context(), host)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "max-age=3600")
	c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(policy))
}

func (s *server) deleteDomain(c *gin.Context) (int, any, error) {
	return http.StatusNoContent, nil, s.app.Domains.Delete(c.Request.Context(), principal(c), c.Param("name"))
}

type suppressionView struct {
	Email     string  `json:"email"`
	Identity  string  `json:"identity"`
	Reason    string  `json:"reason"`
	CreatedDT apiTime `json:"created_dt"`
}

func viewSuppression(sup core.Suppression) suppressionView {
	return suppressionView{Email: sup.Email, Identity: sup.IdentityID, Reason: sup.Reason, CreatedDT: apiTime(sup.CreatedAt)}
}

func (s *server) listSuppressions(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, email := q.uuid("identity"), q.email("email")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Suppressions.List(c.Request.Context(), principal(c), identity, email, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewSuppression), nil
}

func (s *server) deleteSuppression(c *gin.Context) (int, any, error) {
	identity, err := identityParam(c)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Suppressions.Delete(c.Request.Context(), principal(c), identity, c.Param("email"))
}
