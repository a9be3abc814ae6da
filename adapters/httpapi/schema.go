package httpapi

import (
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

// openAPIJSON is the document converted once, on first request.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) { return yaml.YAMLToJSON(OpenAPIDocument) })

// schema serves the document: YAML by default (as drf-spectacular does),
// JSON for ?format=json or a client that asks for JSON.
func (s *server) schema(c *gin.Context) {
	format := c.Query("format")
	if format == "json" || format == "" && strings.Contains(c.GetHeader("Accept"), "application/json") {
		doc, err := openAPIJSON()
		if err != nil {
			s.fail(c, err)
			return
		}
		c.Data(http.StatusOK, "application/json", doc)
		return
	}
	c.Data(http.StatusOK, "application/vnd.oai.openapi; charset=utf-8", OpenAPIDocument)
}
