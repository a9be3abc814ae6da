package httpapi

import (
	"bytes"
	_ "embed"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// The reference page at /api/docs/ draws the OpenAPI document with Redoc
// (Redocly's renderer), loaded from a pinned CDN URL that the browser
// checks against its Subresource Integrity hash: no third-party code is in
// this repository or served by us. The hash is that of the file in the
// redoc package on npm, which jsDelivr serves byte for byte; a test checks
// it against the package.
const (
	RedocVersion   = "3.0.1"
	RedocScriptURL = "https://cdn.jsdelivr.net/npm/redoc@" + RedocVersion + "/bundles/redoc.standalone.js"
	RedocIntegrity = "sha384-j07qRKHNNmcwU1/Y1elJc7pDLHXP/QfbQXTtSkbOJ7uYGJikqAzsFVbY2zR9FqOT"
)

//go:embed docs.html
var docsHTML string

var docsPage = func() []byte {
	var b bytes.Buffer
	if err := template.Must(template.New("docs").Parse(docsHTML)).Execute(&b, struct{ ScriptURL, Integrity string }{RedocScriptURL, RedocIntegrity}); err != nil {
		panic(err)
	}
	return b.Bytes()
}()

// docsPolicy lets the page run the pinned script and nothing else: Redoc
// styles itself inline, reads the document from this host and starts a
// search worker from a blob.
const docsPolicy = "default-src 'none'; script-src https://cdn.jsdelivr.net; style-src 'unsafe-inline'; img-src data: https:; font-src data:; " +
	"connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docs serves the reference page.
func (s *server) docs(c *gin.Context) {
	c.Header("Content-Security-Policy", docsPolicy)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
	c.Data(http.StatusOK, "text/html; charset=utf-8", docsPage)
}

// indexView is GET /: where to go from here.
type indexView struct {
	Service string `json:"service"`
	Version string `json:"version"`
	Schema  string `json:"schema"`
	Docs    string `json:"docs"`
	Health  string `json:"health"`
}

// index answers GET / with the addresses of the API's description, its
// reference page and the health check; a browser is sent to the console,
// as a person opening the service's address means to see it.
func (s *server) index(c *gin.Context) (int, any, error) {
	c.Header("Vary", "Accept")
	if s.hasConsole && acceptsHTML(c.GetHeader("Accept")) {
		c.Header("Location", ConsolePath)
		return http.StatusFound, nil, nil
	}
	if err := newStrictQuery(c).err(); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, indexView{Service: "Callsign", Version: s.version, Schema: s.baseURL + "/api/schema/",
		Docs: s.baseURL + "/api/docs/", Health: s.baseURL + "/api/health/ping/"}, nil
}

// acceptsHTML reports whether an Accept header names text/html with a
// weight above zero, as a browser's navigation does; curl's */* does not.
func acceptsHTML(accept string) bool {
	for _, r := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(r)
		if err != nil || mediaType != "text/html" {
			continue
		}
		if q, err := strconv.ParseFloat(params["q"], 64); params["q"] == "" || err == nil && q > 0 {
			return true
		}
	}
	return false
}
