package httpapi

import (
	"time"

	"github.com/callsign/callsign/core"
)

// apiTime renders as RFC 3339 in UTC with microseconds, as DRF does.
type apiTime time.Time

const apiTimeLayout = "2006-01-02T15:04:05.000000Z"

// MarshalText rather than MarshalJSON: encoding/json quotes a text
// itself, while it scans and copies whatever MarshalJSON returns again
// (2% of a page of messages' CPU, issue 12).
func (t apiTime) MarshalText() ([]byte, error) {
	return time.Time(t).UTC().AppendFormat(make([]byte, 0, len(apiTimeLayout)), apiTimeLayout), nil
}

// optTime is a time that may be null.
func optTime(t *time.Time) *apiTime {
	if t == nil || t.IsZero() {
		return nil
	}
	v := apiTime(*t)
	return &v
}

// optString renders "" as null.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type keyView struct {
	ID       int64   `json:"id"`
	Name     string  `json:"name"`
	Prefix   string  `json:"prefix"`
	Identity *string `json:"identity,omitempty"`
	// CanProvision and CanSend are shown for identity keys only.
	CanProvision *bool `json:"can_provision,omitempty"`
	CanSend      *bool `json:"can_send,omitempty"`
	// Origin is how the key was made (core.KeyOrigin).
	Origin     string   `json:"origin"`
	CreatedDT  apiTime  `json:"created_dt"`
	LastUsedDT *apiTime `json:"last_used_dt"`
	// Key is the full key, present only in the creation response.
	Key string `json:"key,omitempty"`
}

func viewKey(k core.APIKey) keyView {
	v := keyView{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Origin: string(k.Origin), CreatedDT: apiTime(k.CreatedAt), LastUsedDT: optTime(k.LastUsedAt)}
	if k.Type == core.KeyIdentity {
		id, can, send := k.IdentityID, k.CanProvision, k.CanSend
		v.Identity, v.CanProvision, v.CanSend = &id, &can, &send
	}
	return v
}

type identityView struct {
	UUID      string  `json:"uuid"`
	Name      string  `json:"name"`
	Inbox     string  `json:"inbox"`
	Phone     *string `json:"phone"`
	CreatedDT apiTime `json:"created_dt"`
	UpdatedDT apiTime `json:"updated_dt"`
}

func viewIdentity(i core.Identity) identityView {
	return identityView{UUID: i.ID, Name: i.Name, Inbox: i.Inbox, Phone: optString(i.Phone),
		CreatedDT: apiTime(i.CreatedAt), UpdatedDT: apiTime(i.UpdatedAt)}
}

// viewAll renders a list, never null: an empty list is [].
func viewAll[T, V any](items []T, view func(T) V) []V {
	out := make([]V, len(items))
	for i, it := range items {
		out[i] = view(it)
	}
	return out
}
