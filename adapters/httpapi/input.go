package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
)

// maxBodyBytes bounds every request body but uploads.
const maxBodyBytes = 1 << 20

// input is a request body read from JSON, form-encoded or multipart data,
// with typed getters that record what is wrong under the field's name. A
// handler reads every field, then asks err() once, so a caller hears about
// every bad field at the same time. A strict input (readInput's) also
// refuses, in err(), every field its handler never read, so a typo is a
// 400 naming it rather than a resource made without it.
type input struct {
	json     map[string]json.RawMessage
	form     url.Values
	files    map[string][]*multipart.FileHeader
	problems core.Problems
	read     map[string]bool // nil unless strict
	ignored  map[string]bool // accepted without being read (readInputFor)
}

var errTooLarge = core.TooLarge("Request body too large (limit 1 MiB).")

// acceptedBodies ends the 415 messages.
const acceptedBodies = "send application/json, application/x-www-form-urlencoded or multipart/form-data."

// readInput parses the body of c by its content type. An empty body is an
// empty input; JSON must be an object. The input is strict.
func readInput(c *gin.Context) (*input, error) {
	return readInputLimit(c, maxBodyBytes, errTooLarge)
}

// readInputFor is readInput for a route that takes a resource viewed as V.
// A PUT or PATCH also accepts, and ignores, V's fields the handler does not
// read: they are read-only, and a client may send the resource back whole
// as it read it.
func readInputFor[V any](c *gin.Context) (*input, error) {
	in, err := readInput(c)
	if err != nil || (c.Request.Method != http.MethodPut && c.Request.Method != http.MethodPatch) {
		return in, err
	}
	in.ignored = map[string]bool{}
	for _, name := range fieldNames[V]() {
		in.ignored[name] = true
	}
	return in, nil
}

// bodiless is h for a route that takes no body: fields sent anyway are
// refused as unknown, as on every route that takes one.
func bodiless(h handler) handler {
	return func(c *gin.Context) (int, any, error) {
		in, err := readInput(c)
		if err == nil {
			err = in.err()
		}
		if err != nil {
			return 0, nil, err
		}
		return h(c)
	}
}

// readOpenInput is readInput for senders that add fields we do not read
// and must not be refused for it: providers' webhooks (Twilio adds
// parameters without notice) and OAuth's device endpoints (RFC 6749 §3.2:
// unrecognized request parameters are ignored).
func readOpenInput(c *gin.Context) (*input, error) {
	in, err := readInput(c)
	if in != nil {
		in.read = nil
	}
	return in, err
}

func readInputLimit(c *gin.Context, limit int64, tooLarge error) (*input, error) {
	in := &input{read: map[string]bool{}}
	r := c.Request
	r.Body = http.MaxBytesReader(c.Writer, r.Body, limit)
	mediaType := ""
	if ct := r.Header.Get("Content-Type"); ct != "" {
		var err error
		if mediaType, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, &core.Error{Kind: core.KindInvalid, Message: "Malformed Content-Type header.",
				Fields: map[string][]string{core.NonFieldErrors: {"Malformed Content-Type header."}}}
		}
	}
	var maxErr *http.MaxBytesError
	switch mediaType {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			if errors.As(err, &maxErr) {
				return nil, tooLarge
			}
			return nil, malformed("Malformed multipart body: %v", err)
		}
		in.form, in.files = r.MultipartForm.Value, r.MultipartForm.File
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			if errors.As(err, &maxErr) {
				return nil, tooLarge
			}
			return nil, malformed("Malformed form body.")
		}
		in.form = r.PostForm
	default:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			if errors.As(err, &maxErr) {
				return nil, tooLarge
			}
			return nil, err
		}
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) == 0 {
			return in, nil
		}
		switch {
		case mediaType == "application/json" || strings.HasSuffix(mediaType, "+json"):
		case mediaType == "" && (trimmed[0] == '{' || trimmed[0] == '['):
			// Without a Content-Type, a body that looks like JSON is read as JSON.
		case mediaType == "":
			return nil, &statusError{http.StatusUnsupportedMediaType, "The request has a body but no Content-Type header, and the body is not JSON; " + acceptedBodies}
		default:
			return nil, &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("Unsupported media type %q in request; %s", mediaType, acceptedBodies)}
		}
		if err := json.Unmarshal(body, &in.json); err != nil || in.json == nil {
			return nil, malformed("JSON parse error: the body must be a JSON object.")
		}
	}
	return in, nil
}

func malformed(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &core.Error{Kind: core.KindInvalid, Message: msg, Fields: map[string][]string{core.NonFieldErrors: {msg}}}
}

// str reads a string field; nil when absent. JSON null reads as "".
func (in *input) str(name string) *string {
	in.mark(name)
	if in.json != nil {
		raw, ok := in.json[name]
		if !ok {
			return nil
		}
		if string(raw) == "null" {
			s := ""
			return &s
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			in.problems.Add(name, "Not a valid string.")
			return nil
		}
		return &s
	}
	vs, ok := in.form[name]
	if !ok {
		return nil
	}
	s := ""
	if len(vs) > 0 {
		s = vs[0]
	}
	return &s
}

// text reads a string field as a value, "" when absent.
func (in *input) text(name string) string {
	if s := in.str(name); s != nil {
		return *s
	}
	return ""
}

// boolean reads a boolean field: JSON true/false, or in forms the words DRF
// accepts ("true", "1", "yes", "on" and their opposites).
func (in *input) boolean(name string) *bool {
	in.mark(name)
	if in.json != nil {
		raw, ok := in.json[name]
		if !ok {
			return nil
		}
		var b bool
		if err := json.Unmarshal(raw, &b); err == nil {
			return &b
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if b, ok := parseBool(s); ok {
				return &b
			}
		}
		in.problems.Add(name, "Must be a valid boolean.")
		return nil
	}
	s := in.str(name)
	if s == nil {
		return nil
	}
	b, ok := parseBool(*s)
	if !ok {
		in.problems.Add(name, "Must be a valid boolean.")
		return nil
	}
	return &b
}

// strList reads a list of strings: a JSON array or one comma-separated
// string; in forms, repeated fields or one comma-separated value.
func (in *input) strList(name string) ([]string, bool) {
	in.mark(name)
	var items []string
	if in.json != nil {
		raw, ok := in.json[name]
		if !ok {
			return nil, false
		}
		if string(raw) == "null" {
			return nil, true
		}
		if err := json.Unmarshal(raw, &items); err != nil {
			var one string
			if err := json.Unmarshal(raw, &one); err != nil {
				in.problems.Add(name, "Expected a list of strings.")
				return nil, true
			}
			items = []string{one}
		}
	} else {
		vs, ok := in.form[name]
		if !ok {
			return nil, false
		}
		items = vs
	}
	var out []string
	for _, item := range items {
		for _, part := range splitCommas(item) {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out, true
}

// splitCommas splits at the commas outside double quotes, so that a
// recipient such as "Lee, Bo" <bo@example.org> stays whole.
func splitCommas(s string) []string {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == ',' && !quoted:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// mark records that the handler knows the field name.
func (in *input) mark(name string) {
	if in.read != nil {
		in.read[name] = true
	}
}

// filesOf reads the files of a multipart field.
func (in *input) filesOf(name string) []*multipart.FileHeader {
	in.mark(name)
	return in.files[name]
}

// err reports every problem, and for a strict input every field the
// handler neither read nor ignored, in the words of an unknown query
// parameter (query.err).
func (in *input) err() error {
	if in.read != nil {
		known := slices.Sorted(maps.Keys(in.read))
		for _, name := range in.sent() {
			if in.read[name] || in.ignored[name] {
				continue
			}
			if len(known) == 0 {
				in.problems.Add(name, "Unknown field; this route takes none.")
			} else {
				in.problems.Add(name, "Unknown field; this route takes %s.", strings.Join(known, ", "))
			}
		}
	}
	return in.problems.Err()
}

// fieldNames are the names a view of type V has in JSON: the fields a
// client may send back as it read them.
func fieldNames[V any]() []string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
				walk(f.Type) // its fields are promoted, as encoding/json does, exported or not
			case !f.IsExported():
			case name == "":
				names = append(names, f.Name)
			default:
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeFor[V]())
	return names
}

// sent lists the body's fields: a JSON object's members, or a form's
// fields and files.
func (in *input) sent() []string {
	if in.json != nil {
		return slices.Collect(maps.Keys(in.json))
	}
	return append(slices.Collect(maps.Keys(in.form)), slices.Collect(maps.Keys(in.files))...)
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes", "on", "t", "y":
		return true, true
	case "false", "0", "no", "off", "f", "n":
		return false, true
	}
	return false, false
}

// query reads query parameters with the same habit of collecting problems.
// A strict query (lists and lookups) also refuses parameters its handler
// never read, so a typo or a filter that does not exist is a 400 naming it
// instead of a list of everything.
type query struct {
	values   url.Values
	problems core.Problems
	read     map[string]bool // nil unless strict
}

func newQuery(c *gin.Context) *query { return &query{values: c.Request.URL.Query()} }

// newStrictQuery is newQuery for routes whose parameters are all filters
// or options: what the handler does not read is unknown.
func newStrictQuery(c *gin.Context) *query {
	q := newQuery(c)
	q.read = map[string]bool{}
	return q
}

// raw is a parameter's value as sent (after URL decoding).
func (q *query) raw(name string) string {
	if q.read != nil {
		q.read[name] = true
	}
	return q.values.Get(name)
}

func (q *query) str(name string) string { return strings.TrimSpace(q.raw(name)) }

// phone reads a phone number or filter. An unencoded '+' arrives as a
// space, so a leading space before a digit is the '+' of an E.164 number.
func (q *query) phone(name string) string {
	s := q.raw(name)
	if len(s) > 1 && s[0] == ' ' && s[1] >= '0' && s[1] <= '9' {
		s = "+" + s[1:]
	}
	return strings.TrimSpace(s)
}

// email reads an address. No address holds a space, so a space is an
// unencoded '+' (as in name+tag@example.com).
func (q *query) email(name string) string {
	return strings.ReplaceAll(q.str(name), " ", "+")
}

// uuid reads a UUID parameter in canonical form; "" when absent.
func (q *query) uuid(name string) string {
	s := q.str(name)
	if s == "" {
		return ""
	}
	u, err := uuid.Parse(s)
	if err != nil {
		q.problems.Add(name, "Must be a valid UUID.")
		return ""
	}
	return u.String()
}

// boolean reads true/false; nil when absent.
func (q *query) boolean(name string) *bool {
	s := q.str(name)
	if s == "" {
		return nil
	}
	b, ok := parseBool(s)
	if !ok {
		q.problems.Add(name, "Must be a valid boolean.")
		return nil
	}
	return &b
}

// integer reads an integer in [min, max]; def when absent.
func (q *query) integer(name string, def, min, max int64) int64 {
	s := q.str(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		q.problems.Add(name, "A valid integer is required.")
		return def
	}
	if n < min || n > max {
		q.problems.Add(name, "Ensure this value is between %d and %d.", min, max)
		return def
	}
	return n
}

// time reads an ISO 8601 date-time; nil when absent.
func (q *query) time(name string) *time.Time {
	s := q.str(name)
	if s == "" {
		return nil
	}
	t, err := parseTime(s)
	if err != nil {
		q.problems.Add(name, "Datetime has wrong format. Use ISO 8601, such as 2026-11-21T08:00:00.123456Z.")
		return nil
	}
	return &t
}

// labels reads a comma-separated list of labels (core.ParseLabels); nil
// when absent.
func (q *query) labels(name string) []string {
	labels, err := core.ParseLabels(name, q.raw(name))
	if !q.problems.Merge(err) && err != nil {
		q.problems.Add(name, "%s", err.Error())
	}
	return labels
}

// err reports every problem, and for a strict query every parameter the
// handler did not read.
func (q *query) err() error {
	if q.read != nil {
		known := slices.Sorted(maps.Keys(q.read))
		for name := range q.values {
			if !q.read[name] {
				if len(known) == 0 {
					q.problems.Add(name, "Unknown query parameter; this route takes none.")
				} else {
					q.problems.Add(name, "Unknown query parameter; this route takes %s.", strings.Join(known, ", "))
				}
			}
		}
	}
	return q.problems.Err()
}

// parseTime accepts RFC 3339 with any fraction, and a space for the T;
// a '+' that a client forgot to escape arrives as a space, and is put back.
func parseTime(s string) (time.Time, error) {
	if i := strings.LastIndexByte(s, ' '); i > 10 {
		s = s[:i] + "+" + s[i+1:]
	}
	s = strings.Replace(s, " ", "T", 1)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// pathUUID reads a UUID path parameter; a malformed one is simply not found.
func pathUUID(c *gin.Context, name, what string) (string, error) {
	u, err := uuid.Parse(c.Param(name))
	if err != nil {
		return "", core.NotFound("%s not found.", what)
	}
	return u.String(), nil
}

// pathID reads an integer path parameter; anything else is not found.
func pathID(c *gin.Context, name, what string) (int64, error) {
	n, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || n <= 0 {
		return 0, core.NotFound("%s not found.", what)
	}
	return n, nil
}

// uuid reads a UUID field in canonical form; "" when absent or blank.
func (in *input) uuid(name string) string {
	s := in.str(name)
	if s == nil || strings.TrimSpace(*s) == "" {
		return ""
	}
	u, err := uuid.Parse(strings.TrimSpace(*s))
	if err != nil {
		in.problems.Add(name, "Must be a valid UUID.")
		return ""
	}
	return u.String()
}

// search reads q, a search query (core.ParseSearch) of target; nil when
// absent. A q that is present but empty is a 400, as is any query
// ParseSearch refuses or with a filter that does not apply to target.
func (q *query) search(target core.SearchTarget) *core.SearchQuery {
	raw := q.raw("q")
	if _, sent := q.values["q"]; !sent {
		return nil
	}
	s, err := core.ParseSearch(raw)
	if err == nil {
		err = s.For(target)
	}
	if !q.problems.Merge(err) && err != nil {
		q.problems.Add("q", "%s", err.Error())
	}
	if err != nil {
		return nil
	}
	return &s
}

// newestFirst reads ordering: created_dt (oldest first) or -created_dt
// (newest first, which also keeps a search in plain recency).
func (q *query) newestFirst() bool {
	switch o := q.str("ordering"); o {
	case "", "created_dt":
		return false
	case "-created_dt":
		return true
	default:
		q.problems.Add("ordering", "%q is not a valid choice; use created_dt or -created_dt.", o)
		return false
	}
}

// unrankedOrdering reads ordering for a list whose searches are ranked by
// relevance alone (texts, contacts): created_dt or -created_dt, true for
// newest first, newest when absent; with a search it is a 400.
func (q *query) unrankedOrdering(search *core.SearchQuery, newest bool) bool {
	o := q.str("ordering")
	if o != "" && search != nil {
		q.problems.Add("ordering", "A search is ordered by relevance; leave ordering out, or narrow q with before:/after:.")
		return newest
	}
	if o == "" {
		return newest
	}
	return q.newestFirst()
}

// id reads a positive integer field (a JSON number, or digits as a string
// or form value); 0 when absent or null.
func (in *input) id(name string) int64 {
	in.mark(name)
	var text string
	if raw, ok := in.json[name]; ok && in.json != nil {
		if string(raw) == "null" {
			return 0
		}
		text = strings.Trim(string(raw), `"`)
	} else if s := in.str(name); s != nil {
		text = *s
	} else {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil || n <= 0 {
		in.problems.Add(name, "A valid id (a positive integer) is required.")
		return 0
	}
	return n
}

// time reads an ISO 8601 date-time field: nil when absent, and with set
// true when present (null or "" clear it, leaving nil).
func (in *input) time(name string) (t *time.Time, set bool) {
	s := in.str(name)
	if s == nil {
		return nil, false
	}
	if strings.TrimSpace(*s) == "" {
		return nil, true
	}
	v, err := parseTime(strings.TrimSpace(*s))
	if err != nil {
		in.problems.Add(name, "Datetime has wrong format. Use ISO 8601, such as 2026-11-21T08:00:00.123456Z.")
		return nil, true
	}
	return &v, true
}

// present reports whether the body carries the field.
func (in *input) present(name string) bool {
	in.mark(name)
	if in.json != nil {
		_, ok := in.json[name]
		return ok
	}
	_, ok := in.form[name]
	return ok
}
