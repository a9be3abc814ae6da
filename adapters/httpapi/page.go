package httpapi

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// listQuery is how a list was asked for: the page the store reads, and
// whether the answer is the envelope (the caller sent limit or offset) or
// the spec's plain array.
type listQuery struct {
	page     ports.Page
	envelope bool
}

// list reads limit and offset, as Django REST framework's limit/offset
// paginator without a default limit does: either one asks for the
// envelope; neither keeps the spec's plain array, of at most
// core.MaxUnpagedList items (one more is read, to know whether a Link to
// the rest is due).
func (q *query) list() listQuery {
	limitGiven, offsetGiven := q.str("limit") != "", q.str("offset") != ""
	if !limitGiven && !offsetGiven {
		return listQuery{page: ports.Page{Limit: core.MaxUnpagedList + 1}}
	}
	limit, offset := q.limit(), q.offset()
	return listQuery{page: ports.Page{Limit: limit, Offset: offset, Count: true, CountUpTo: q.countUpTo(offset, limit)}, envelope: true}
}

// countUpTo reads `count`: "exact" counts every match; without it the
// envelope's count stops at core.CountBound, which is enough to link the
// next page and keeps every page's cost bounded whatever the list holds.
func (q *query) countUpTo(offset, limit int) int {
	switch v := q.str("count"); v {
	case "":
		return core.CountBound(offset, limit)
	case "exact":
		return 0
	default:
		q.problems.Add("count", "%q is not a valid choice; use exact.", v)
		return 0
	}
}

// limit reads `limit`: a whole number from 1, where numbers over
// core.MaxPageLimit count as it (the spec's cap), however large.
func (q *query) limit() int {
	s := q.str("limit")
	if s == "" {
		return core.DefaultPageLimit
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(s, "-") {
		return core.MaxPageLimit
	}
	if err != nil || n < 1 {
		q.problems.Add("limit", "Enter a whole number from 1 to %d (larger numbers count as %d).", core.MaxPageLimit, core.MaxPageLimit)
		return core.DefaultPageLimit
	}
	return int(min(n, core.MaxPageLimit))
}

// maxOffset bounds `offset`, so that it fits every database's integers.
const maxOffset = 1<<31 - 1

// offset reads `offset`: a whole number from 0.
func (q *query) offset() int {
	s := q.str("offset")
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > maxOffset {
		q.problems.Add("offset", "Enter a whole number from 0 to %d.", maxOffset)
		return 0
	}
	return int(n)
}

// page is the envelope of a paged list, as the email message list has it
// (spec §2): the number of every match, the neighbouring pages' addresses.
type page[V any] struct {
	Count    int     `json:"count"`
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
	Results  []V     `json:"results"`
}

// envelope wraps one page of results.
func envelope[V any](s *server, c *gin.Context, p ports.Page, total int, results []V) page[V] {
	e := page[V]{Count: total, Results: results}
	if p.Offset+p.Limit < total {
		e.Next = s.pageURL(c, p.Limit, p.Offset+p.Limit)
	}
	if p.Offset > 0 {
		e.Previous = s.pageURL(c, p.Limit, max(0, p.Offset-p.Limit))
	}
	return e
}

// listed is the answer to a list: the envelope when the caller paged, else
// the plain array, cut at core.MaxUnpagedList with a Link header (RFC 8288)
// to the page that follows.
func listed[T, V any](s *server, c *gin.Context, lq listQuery, items []T, total int, view func(T) V) any {
	if lq.envelope {
		return envelope(s, c, lq.page, total, viewAll(items, view))
	}
	if len(items) > core.MaxUnpagedList {
		items = items[:core.MaxUnpagedList]
		c.Header("Link", "<"+*s.pageURL(c, core.MaxPageLimit, core.MaxUnpagedList)+`>; rel="next"`)
	}
	return viewAll(items, view)
}

// pageURL is this request's URL with another limit and offset, as DRF's
// paginator builds it.
func (s *server) pageURL(c *gin.Context, limit, offset int) *string {
	q := c.Request.URL.Query()
	q.Set("limit", strconv.Itoa(limit))
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	} else {
		q.Del("offset")
	}
	u := s.baseURL + c.Request.URL.Path + "?" + q.Encode()
	return &u
}
