package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Webhooks: the account's endpoints, add one (its signing secret is shown
// once, on the answer), each one's delivery log, send a test, remove.

type webhooksData struct {
	Webhooks []core.Webhook
	URL      string
	Types    string
	New      *core.Webhook // just made: its secret is shown this once
}

func (c *console) webhooksPage(v *visit) error {
	return c.showWebhooks(v, webhooksData{}, http.StatusOK, nil)
}

func (c *console) showWebhooks(v *visit, data webhooksData, status int, problem error) error {
	list, err := c.app.Webhooks.List(v.r.Context(), v.principal)
	if err != nil {
		return err
	}
	data.Webhooks = list
	pv := view{Title: "Webhooks", Nav: "webhooks", Data: data}
	if problem != nil {
		status = c.withProblem(v, &pv, problem)
	}
	c.render(v, status, "webhooks", pv)
	return nil
}

func (c *console) createWebhook(v *visit) error {
	data := webhooksData{URL: formValue(v, "url"), Types: formValue(v, "event_types")}
	in := app.WebhookInput{URL: &data.URL}
	if types := strings.FieldsFunc(data.Types, func(r rune) bool { return r == ',' || r == ' ' }); len(types) > 0 {
		in.EventTypes = &types
	}
	w, err := c.app.Webhooks.Create(v.r.Context(), v.principal, in)
	if err != nil {
		return c.showWebhooks(v, data, 0, err)
	}
	return c.showWebhooks(v, webhooksData{New: &w}, http.StatusCreated, nil)
}

type webhookData struct {
	Webhook    core.Webhook
	Deliveries []core.WebhookDelivery
	Tested     *app.TestOutcome
	Secret     string // a new secret, shown this once after a rotation
}

func (c *console) webhookPage(v *visit) error { return c.showWebhook(v, webhookData{}, "") }

// showWebhook shows an endpoint, its latest deliveries (each with its
// last request and answer) and what was just done to it.
func (c *console) showWebhook(v *visit, data webhookData, notice string) error {
	id, err := pathUUID(v, "id", "Webhook")
	if err != nil {
		return err
	}
	if data.Webhook, err = c.app.Webhooks.Get(v.r.Context(), v.principal, id); err != nil {
		return err
	}
	if data.Deliveries, _, err = c.app.Webhooks.Deliveries(v.r.Context(), v.principal, id, ports.Page{Limit: pageSize}); err != nil {
		return err
	}
	c.render(v, http.StatusOK, "webhook", view{Title: "Webhook", Nav: "webhooks", Notice: notice, Data: data})
	return nil
}

func (c *console) testWebhook(v *visit) error {
	id, err := pathUUID(v, "id", "Webhook")
	if err != nil {
		return err
	}
	outcome, err := c.app.Webhooks.Test(v.r.Context(), v.principal, id)
	if err != nil {
		return err
	}
	return c.showWebhook(v, webhookData{Tested: &outcome}, "")
}

// enableWebhook turns an endpoint on (enabled=1) or off.
func (c *console) enableWebhook(v *visit) error {
	id, err := pathUUID(v, "id", "Webhook")
	if err != nil {
		return err
	}
	on := v.r.PostFormValue("enabled") == "1"
	if _, err := c.app.Webhooks.Update(v.r.Context(), v.principal, id, app.WebhookInput{Enabled: &on}); err != nil {
		return err
	}
	return redirect(v, root+"webhooks/"+id+"/")
}

// rotateWebhookSecret gives the endpoint a new secret, shown this once.
func (c *console) rotateWebhookSecret(v *visit) error {
	id, err := pathUUID(v, "id", "Webhook")
	if err != nil {
		return err
	}
	w, err := c.app.Webhooks.RotateSecret(v.r.Context(), v.principal, id)
	if err != nil {
		return err
	}
	return c.showWebhook(v, webhookData{Secret: w.Secret}, "")
}

// retryDelivery makes one delivery due now; the worker sends it soon.
func (c *console) retryDelivery(v *visit) error {
	id, err := pathUUID(v, "id", "Webhook")
	if err != nil {
		return err
	}
	delivery, err := pathID(v, "delivery", "Delivery")
	if err != nil {
		return err
	}
	if _, err := c.app.Webhooks.Retry(v.r.Context(), v.principal, id, delivery); err != nil {
		return err
	}
	return c.showWebhook(v, webhookData{}, "Delivery "+strconv.FormatInt(delivery, 10)+" will be sent again in a moment.")
}

func (c *console) deleteWebhook(v *visit) error {
	id, err := pathUUID(v, "id", "Webhook")
	if err != nil {
		return err
	}
	if err := c.app.Webhooks.Delete(v.r.Context(), v.principal, id); err != nil {
		return err
	}
	return redirect(v, root+"webhooks/")
}
