package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/memory"
)

// TestMCPEndpointSitsBehindTheAPI: /mcp needs a key, counts against the
// key's bucket with every other route, and is absent without Options.MCP.
func TestMCPEndpointSitsBehindTheAPI(t *testing.T) {
	clock := memory.NewClock(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))
	h := newSignInHarness(t, Options{RateLimit: RateLimit{PerSecond: 1, Burst: 3}, Now: clock.Now, MCP: mcpStub})
	key := h.account()
	ping := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}
	h.do("POST", "/mcp", ping, "").want(t, http.StatusUnauthorized)
	if got := h.do("POST", "/mcp", ping, key).want(t, http.StatusOK).object(t)["result"].(map[string]any)["key"]; got != "Bearer "+key {
		t.Errorf("the endpoint got %v", got)
	}
	h.do("GET", "/api/health/whoami/", nil, key).want(t, http.StatusOK)
	h.do("GET", "/api/health/whoami/", nil, key).want(t, http.StatusOK)
	if res := h.do("POST", "/mcp", ping, key).want(t, http.StatusTooManyRequests); res.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	h.do("PUT", "/mcp", ping, key).want(t, http.StatusMethodNotAllowed)

	off := newSignInHarness(t, Options{})
	off.do("POST", "/mcp", ping, off.account()).want(t, http.StatusNotFound)
}
