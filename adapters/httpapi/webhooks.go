package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type webhookView struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	EventTypes     []string `json:"event_types"`
	Identities     []string `json:"identities"`
	Description    string   `json:"description"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabled_reason"`
	CreatedDT      apiTime  `json:"created_dt"`
	UpdatedDT      apiTime  `json:"updated_dt"`
	// Secret is shown on create, by the secret route and by a rotation only.
	Secret string `json:"secret,omitempty"`
}

func viewWebhook(w core.Webhook) webhookView {
	return webhookView{ID: w.ID, URL: w.URL, EventTypes: nonNil(w.EventTypes), Identities: nonNil(w.Identities),
		Description: w.Description, Enabled: w.Enabled, DisabledReason: optString(w.DisabledReason), CreatedDT: apiTime(w.CreatedAt),
		UpdatedDT: apiTime(w.UpdatedAt), Secret: w.Secret}
}

type deliveryView struct {
	ID            int64    `json:"id"`
	Event         string   `json:"event"`
	Type          string   `json:"type"`
	Status        string   `json:"status"`
	Attempts      int      `json:"attempts"`
	StatusCode    *int     `json:"status_code"`
	Error         *string  `json:"error"`
	NextAttemptDT *apiTime `json:"next_attempt_dt"`
	LatencyMS     *int64   `json:"latency_ms"`
	CreatedDT     apiTime  `json:"created_dt"`
}

func viewDelivery(d core.WebhookDelivery) deliveryView {
	v := deliveryView{ID: d.ID, Event: strconv.FormatInt(d.EventSeq, 10), Type: string(d.EventType), Status: d.Status,
		Attempts: d.Attempts, Error: optString(d.Error), CreatedDT: apiTime(d.CreatedAt)}
	if d.StatusCode != 0 {
		v.StatusCode = &d.StatusCode
	}
	if d.Attempts > 0 {
		v.LatencyMS = &d.LatencyMS
	}
	if d.Status == core.WebhookPending {
		v.NextAttemptDT = optTime(&d.NextAt)
	}
	return v
}

type testView struct {
	Delivered  bool    `json:"delivered"`
	StatusCode *int    `json:"status_code"`
	Error      *string `json:"error"`
	LatencyMS  int64   `json:"latency_ms"`
}

func readWebhookInput(c *gin.Context) (app.WebhookInput, error) {
	in, err := readInputFor[webhookView](c)
	if err != nil {
		return app.WebhookInput{}, err
	}
	wi := app.WebhookInput{URL: in.str("url"), Description: in.str("description"), Enabled: in.boolean("enabled")}
	if types, given := in.strList("event_types"); given {
		wi.EventTypes = &types
	}
	if ids, given := in.strList("identities"); given {
		for i, id := range ids {
			u, err := uuid.Parse(id)
			if err != nil {
				in.problems.Add("identities", "%q is not a valid UUID.", id)
				continue
			}
			ids[i] = u.String()
		}
		wi.Identities = &ids
	}
	return wi, in.err()
}

func webhookID(c *gin.Context) (string, error) {
	id, err := uuid.Parse(c.Param("uuid"))
	if err != nil {
		return "", core.NotFound("Webhook not found.")
	}
	return id.String(), nil
}

func (s *server) createWebhook(c *gin.Context) (int, any, error) {
	wi, err := readWebhookInput(c)
	if err != nil {
		return 0, nil, err
	}
	w, err := s.app.Webhooks.Create(c.Request.Context(), principal(c), wi)
	return http.StatusCreated, viewWebhook(w), err
}

func (s *server) listWebhooks(c *gin.Context) (int, any, error) {
	if err := newStrictQuery(c).err(); err != nil {
		return 0, nil, err
	}
	ws, err := s.app.Webhooks.List(c.Request.Context(), principal(c))
	return http.StatusOK, viewAll(ws, viewWebhook), err
}

// webhookAction serves a route of one webhook.
func (s *server) webhookAction(do func(c *gin.Context, id string) (int, any, error)) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := webhookID(c)
		if err != nil {
			return 0, nil, err
		}
		return do(c, id)
	}
}

func (s *server) getWebhook(c *gin.Context, id string) (int, any, error) {
	w, err := s.app.Webhooks.Get(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewWebhook(w), err
}

func (s *server) webhookSecret(c *gin.Context, id string) (int, any, error) {
	w, err := s.app.Webhooks.Secret(c.Request.Context(), principal(c), id)
	return http.StatusOK, map[string]string{"secret": w.Secret}, err
}

func (s *server) patchWebhook(c *gin.Context, id string) (int, any, error) {
	wi, err := readWebhookInput(c)
	if err != nil {
		return 0, nil, err
	}
	w, err := s.app.Webhooks.Update(c.Request.Context(), principal(c), id, wi)
	return http.StatusOK, viewWebhook(w), err
}

func (s *server) deleteWebhook(c *gin.Context, id string) (int, any, error) {
	return http.StatusNoContent, nil, s.app.Webhooks.Delete(c.Request.Context(), principal(c), id)
}

func (s *server) rotateWebhookSecret(c *gin.Context, id string) (int, any, error) {
	w, err := s.app.Webhooks.RotateSecret(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewWebhook(w), err
}

func (s *server) testWebhook(c *gin.Context, id string) (int, any, error) {
	o, err := s.app.Webhooks.Test(c.Request.Context(), principal(c), id)
	v := testView{Delivered: o.Delivered, Error: optString(o.Error), LatencyMS: o.LatencyMS}
	if o.StatusCode != 0 {
		v.StatusCode = &o.StatusCode
	}
	return http.StatusOK, v, err
}

func (s *server) listDeliveries(c *gin.Context, id string) (int, any, error) {
	q := newStrictQuery(c)
	p := ports.Page{Limit: q.limit(), Offset: q.offset(), Count: true}
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	ds, total, err := s.app.Webhooks.Deliveries(c.Request.Context(), principal(c), id, p)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, envelope(s, c, p, total, viewAll(ds, viewDelivery)), nil
}

func (s *server) retryDelivery(c *gin.Context, id string) (int, any, error) {
	n, err := strconv.ParseInt(c.Param("delivery"), 10, 64)
	if err != nil || n < 1 {
		return 0, nil, core.NotFound("Delivery not found.")
	}
	d, err := s.app.Webhooks.Retry(c.Request.Context(), principal(c), id, n)
	return http.StatusOK, viewDelivery(d), err
}
