package console

import (
	"net/http"
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
}

func (c *console) webhookPage(v *visit) error { return c.showWebhook(v, nil) }

func (c *console) showWebhook(v *visit, tested *app.TestOutcome) error {
	id, err := pathUUID(v, "id", "Webhook")
	if err != nil {
		return err
	}
	w, err := c.app.Webhooks.Get(v.r.Context(), v.principal, id)
	if err != nil {
		return err
	}
	deliveries, _, err := c.app.Webhooks.Deliveries(v.r.Context(), v.principal, id, ports.Page{Limit: pageSize})
	if err != nil {
		return err
	}
	c.render(v, http.StatusOK, "webhook", view{Title: "Webhook", Nav: "webhooks", Data: webhookData{Webhook: w, Deliveries: deliveries, Tested: tested}})
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
	return c.showWebhook(v, &outcome)
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
