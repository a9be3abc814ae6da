package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// routeTable answers what Gin's router does not: which methods a path
// allows. Gin matches per method, so a wrong method can land on another
// route's parameter (DELETE /api/contacts/find/ on /api/contacts/:uuid/)
// or on a trailing-slash redirect to a 404; the table finds the route the
// path means, whatever the method, so that these are 405 with Allow.
type routeTable struct {
	routes []*routeEntry
}

type routeEntry struct {
	pattern  string   // Gin's path, such as /api/contacts/:uuid/
	segments []string // split on "/"; a ":name" segment matches any one segment
	methods  []string // sorted
}

func newRouteTable(routes gin.RoutesInfo) *routeTable {
	byPattern := map[string]*routeEntry{}
	t := &routeTable{}
	for _, r := range routes {
		e := byPattern[r.Path]
		if e == nil {
			e = &routeEntry{pattern: r.Path, segments: strings.Split(r.Path, "/")}
			byPattern[r.Path] = e
			t.routes = append(t.routes, e)
		}
		e.methods = append(e.methods, r.Method)
	}
	for _, e := range t.routes {
		slices.Sort(e.methods)
	}
	return t
}

// match is the route a path means: of the patterns that match it, the most
// specific, where a fixed segment beats a parameter at the first place they
// differ (the order Gin's router tries them in). nil when none matches.
func (t *routeTable) match(path string) *routeEntry {
	segments := strings.Split(path, "/")
	var best *routeEntry
	for _, e := range t.routes {
		if e.matches(segments) && (best == nil || e.moreSpecificThan(best)) {
			best = e
		}
	}
	return best
}

func (e *routeEntry) matches(segments []string) bool {
	if len(segments) != len(e.segments) {
		return false
	}
	for i, want := range e.segments {
		if strings.HasPrefix(want, ":") {
			if segments[i] == "" {
				return false
			}
		} else if want != segments[i] {
			return false
		}
	}
	return true
}

func (e *routeEntry) moreSpecificThan(other *routeEntry) bool {
	for i := range e.segments {
		mine, theirs := !strings.HasPrefix(e.segments[i], ":"), !strings.HasPrefix(other.segments[i], ":")
		if mine != theirs {
			return mine
		}
	}
	return false
}

func (e *routeEntry) allows(method string) bool { return slices.Contains(e.methods, method) }

// checkMethod runs before every matched route: when Gin matched a route
// other than the one the path means, the method is wrong for that route.
func (s *server) checkMethod(c *gin.Context) {
	if c.FullPath() != "" {
		if e := s.table.match(c.Request.URL.Path); e != nil && e.pattern != c.FullPath() {
			s.methodNotAllowed(c, e)
			return
		}
	}
	c.Next()
}

// noRoute answers a request Gin found no route for: 405 when the path
// exists with other methods; a redirect when only the trailing slash is
// missing (301 for GET and HEAD, 307 otherwise, so the body is sent again);
// else 404.
func (s *server) noRoute(c *gin.Context) {
	path := c.Request.URL.Path
	if e := s.table.match(path); e != nil {
		s.methodNotAllowed(c, e)
		return
	}
	if !strings.HasSuffix(path, "/") {
		if e := s.table.match(path + "/"); e != nil {
			if !e.allows(c.Request.Method) {
				s.methodNotAllowed(c, e)
				return
			}
			// Escaped as sent: the decoded path may hold bytes no header may.
			target := c.Request.URL.EscapedPath() + "/"
			if c.Request.URL.RawQuery != "" {
				target += "?" + c.Request.URL.RawQuery
			}
			status := http.StatusTemporaryRedirect
			if c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead {
				status = http.StatusMovedPermanently
			}
			c.Redirect(status, target)
			c.Abort()
			return
		}
	}
	s.fail(c, &statusError{http.StatusNotFound, "Not found."})
}

func (s *server) methodNotAllowed(c *gin.Context, e *routeEntry) {
	c.Header("Allow", strings.Join(e.methods, ", "))
	s.fail(c, &statusError{http.StatusMethodNotAllowed, fmt.Sprintf("Method %q not allowed.", c.Request.Method)})
}
