package httpapi

import (
	"bytes"
	_ "embed"
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"
)

// OpenAPIDocument is the API's description, written by hand beside the
// handlers and checked against them by the tests.
//
//go:embed openapi.yaml
var OpenAPIDocument []byte

// baseURLDefault is the default of the document's base_url server
// variable; a running server puts its own CALLSIGN_BASE_URL there, so a
// client generated from /api/schema/ points at the server it came from.
const baseURLDefault = `default: "http://127.0.0.1:8080" # CALLSIGN_BASE_URL`

// servedSchema is the document as this server serves it, in both formats.
type servedSchema struct {
	once       sync.Once
	yaml, json []byte
	err        error
}

func (d *servedSchema) load(baseURL string) ([]byte, []byte, error) {
	d.once.Do(func() {
		d.yaml = bytes.Replace(OpenAPIDocument, []byte(baseURLDefault), []byte(`default: "`+baseURL+`"`), 1)
		d.json, d.err = yaml.YAMLToJSON(d.yaml)
	})
	return d.yaml, d.json, d.err
}

// schema serves the document: YAML by default (as drf-spectacular does),
// JSON for ?format=json or a client that asks for JSON.
func (s *server) schema(c *gin.Context) {
	q := newStrictQuery(c)
	format := q.str("format")
	if format != "" && format != "json" && format != "yaml" {
		q.problems.Add("format", "%q is not a valid choice; use json or yaml.", format)
	}
	if err := q.err(); err != nil {
		s.fail(c, err)
		return
	}
	docYAML, docJSON, err := s.openAPI.load(s.baseURL)
	if err != nil {
		s.fail(c, err)
		return
	}
	if format == "json" || format == "" && strings.Contains(c.GetHeader("Accept"), "application/json") {
		c.Data(http.StatusOK, "application/json", docJSON)
		return
	}
	c.Data(http.StatusOK, "application/vnd.oai.openapi; charset=utf-8", docYAML)
}
