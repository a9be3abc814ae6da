package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/callsign/callsign/adapters/httpapi"
	"github.com/callsign/callsign/adapters/httpapi/redoctest"
	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestReferencePageRendersInABrowser opens /api/docs/ in headless Chromium.
// The browser has no network, so the CDN's answer is the script from the
// redoc package on npm, given to it by the test; the browser still checks
// its integrity and the page's Content-Security-Policy, and the page must
// show the API's operations.
func TestReferencePageRendersInABrowser(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	script := redoctest.Script(t, httpapi.RedocVersion)
	r := start(t, sqlstore.SQLite, nil)

	tab, cancelTab := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil { // its first run: on its own context (phone)
		t.Fatal(err)
	}
	cdn := chromedp.Events(ctx, fetch.RequestPaused)
	do(t, ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "https://*"}}})
		return err
	}))
	served := make(chan string, 16)
	go func() {
		for ev, err := range cdn {
			if err != nil {
				return
			}
			answer := fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: 404}
			if ev.Request.URL == httpapi.RedocScriptURL {
				answer = fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: 200, Body: script, ResponseHeaders: []*fetch.HeaderEntry{
					{Name: "Content-Type", Value: "application/javascript; charset=utf-8"},
					{Name: "Access-Control-Allow-Origin", Value: "*"},
				}}
			}
			served <- ev.Request.URL
			_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
				_, err := cdp.Call(ctx, target, fetch.FulfillRequest, answer)
				return err
			}))
		}
	}()

	do(t, ctx, chromedp.Navigate(r.baseURL+"/api/docs/"))
	// The title and the tags come from the document the page fetched.
	shown := read(t, ctx, chromedp.Poll[bool](`document.body.innerText.includes("Callsign API (1.0.0)") && document.body.innerText.includes("Webhooks")`,
		chromedp.WithPollingTimeout(time.Minute)))
	if !shown {
		t.Fatal("the page does not show the API's description")
	}
	var asked []string
	for len(served) > 0 {
		asked = append(asked, <-served)
	}
	if !slices.Contains(asked, httpapi.RedocScriptURL) {
		t.Errorf("the page never asked for the script: %v", asked)
	}
}
