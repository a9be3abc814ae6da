package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// sourceView shows an inbox's IMAP source: its settings (never the
// password) and how its worker fares.
type sourceView struct {
	Inbox      int64    `json:"inbox"`
	Host       string   `json:"host"`
	Port       int      `json:"port"`
	Username   string   `json:"username"`
	TLS        string   `json:"tls"`
	Folder     string   `json:"folder"`
	Connected  bool     `json:"connected"`
	LastError  *string  `json:"last_error"`
	LastSyncDT *apiTime `json:"last_sync_dt"`
	CreatedDT  apiTime  `json:"created_dt"`
	UpdatedDT  apiTime  `json:"updated_dt"`
}

func viewSource(src core.MailSource) sourceView {
	p := src.Progress
	return sourceView{Inbox: src.InboxID, Host: src.Host, Port: src.Port, Username: src.Username, TLS: string(src.TLS),
		Folder: src.Folder, Connected: p.Connected, LastError: optString(p.LastError), LastSyncDT: optTime(p.LastSyncAt),
		CreatedDT: apiTime(src.CreatedAt), UpdatedDT: apiTime(src.UpdatedAt)}
}

func (s *server) putSource(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Inbox")
	if err != nil {
		return 0, nil, err
	}
	in, err := readInputFor[sourceView](c)
	if err != nil {
		return 0, nil, err
	}
	si := app.SourceInput{Host: in.str("host"), Username: in.str("username"), Password: in.str("password"),
		TLS: in.str("tls"), Folder: in.str("folder"), Port: in.integer("port")}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	src, created, err := s.app.Sources.Put(c.Request.Context(), principal(c), id, si)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return status, viewSource(src), err
}

func (s *server) getSource(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Inbox")
	if err != nil {
		return 0, nil, err
	}
	src, err := s.app.Sources.Get(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewSource(src), err
}

func (s *server) deleteSource(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Inbox")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Sources.Delete(c.Request.Context(), principal(c), id)
}

// integer reads a whole-number field: a JSON number, or a string of digits
// (forms always, JSON as a courtesy); nil when absent.
func (in *input) integer(name string) *int {
	in.mark(name)
	var text string
	if in.json != nil {
		raw, ok := in.json[name]
		if !ok {
			return nil
		}
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil {
			text = n.String()
		} else if err := json.Unmarshal(raw, &text); err != nil {
			in.problems.Add(name, "A valid integer is required.")
			return nil
		}
	} else if s := in.str(name); s != nil {
		text = *s
	} else {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		in.problems.Add(name, "A valid integer is required.")
		return nil
	}
	return &n
}
