package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

func (s *server) ping(c *gin.Context) (int, any, error) {
	return http.StatusOK, gin.H{"status": "ok"}, s.app.Health.Ping(c.Request.Context())
}

// ready is the readiness check for orchestrators and load balancers: 200
// only when the database answers, its schema is current and every part of
// the service runs; 503 naming what is missing otherwise.
func (s *server) ready(c *gin.Context) (int, any, error) {
	return http.StatusOK, gin.H{"status": "ready"}, s.app.Health.Ready(c.Request.Context())
}

type whoamiView struct {
	Account   string  `json:"account"`
	KeyType   string  `json:"key_type"`
	Identity  *string `json:"identity"`
	KeyPrefix string  `json:"key_prefix"`
	CanSend   bool    `json:"can_send"`
	// Usage and Quotas have the same names (core.Quotas); a quota is null
	// when unlimited.
	Usage  map[core.Quota]int64  `json:"usage"`
	Quotas map[core.Quota]*int64 `json:"quotas"`
}

func (s *server) whoami(c *gin.Context) (int, any, error) {
	p := principal(c)
	used, limits, err := s.app.Accounts.Quotas(c.Request.Context(), p)
	if err != nil {
		return 0, nil, err
	}
	v := whoamiView{Account: p.AccountID, KeyType: string(p.KeyType), Identity: optString(p.IdentityID), KeyPrefix: p.KeyPrefix,
		CanSend: p.MaySend(), Usage: map[core.Quota]int64{}, Quotas: map[core.Quota]*int64{}}
	for _, q := range core.Quotas {
		v.Usage[q] = used.Used[q]
		if limit := limits[q]; limit > 0 {
			v.Quotas[q] = &limit
		} else {
			v.Quotas[q] = nil
		}
	}
	return http.StatusOK, v, nil
}

func (s *server) listKeys(t core.KeyType) handler {
	return func(c *gin.Context) (int, any, error) {
		q := newStrictQuery(c)
		identity := ""
		if t == core.KeyIdentity {
			identity = q.uuid("identity")
		}
		lq := q.list()
		if err := q.err(); err != nil {
			return 0, nil, err
		}
		keys, total, err := s.app.Auth.ListKeys(c.Request.Context(), principal(c), t, identity, lq.page)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, listed(s, c, lq, keys, total, viewKey), nil
	}
}

type keyCreator func(context.Context, core.Principal, app.KeyInput) (core.NewKey, error)

// createKey reads a key request; identity keys also take `identity`.
func (s *server) createKey(withIdentity bool, create keyCreator) handler {
	return func(c *gin.Context) (int, any, error) {
		in, err := readInput(c)
		if err != nil {
			return 0, nil, err
		}
		ki := app.KeyInput{Name: in.text("name")}
		if withIdentity {
			ki.Identity = in.uuid("identity")
			if b := in.boolean("can_provision"); b != nil {
				ki.CanProvision = *b
			}
			ki.CanSend = in.boolean("can_send")
		}
		if err := in.err(); err != nil {
			return 0, nil, err
		}
		k, err := create(c.Request.Context(), principal(c), ki)
		if err != nil {
			return 0, nil, err
		}
		v := viewKey(k.Record)
		v.Key = k.Secret
		return http.StatusCreated, v, nil
	}
}

func (s *server) getKey(t core.KeyType) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathID(c, "id", "Key")
		if err != nil {
			return 0, nil, err
		}
		k, err := s.app.Auth.Key(c.Request.Context(), principal(c), t, id)
		return http.StatusOK, viewKey(k), err
	}
}

// updateIdentityKey changes can_send, the one field that changes; other
// fields are read-only and ignored, so a key sent back as read is accepted.
func (s *server) updateIdentityKey(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Key")
	if err != nil {
		return 0, nil, err
	}
	in, err := readInputFor[keyView](c)
	if err != nil {
		return 0, nil, err
	}
	canSend := in.boolean("can_send")
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	var k core.APIKey
	if canSend == nil {
		k, err = s.app.Auth.Key(c.Request.Context(), principal(c), core.KeyIdentity, id)
	} else {
		k, err = s.app.Auth.SetCanSend(c.Request.Context(), principal(c), id, *canSend)
	}
	return http.StatusOK, viewKey(k), err
}

func (s *server) deleteKey(t core.KeyType) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathID(c, "id", "Key")
		if err != nil {
			return 0, nil, err
		}
		return http.StatusNoContent, nil, s.app.Auth.DeleteKey(c.Request.Context(), principal(c), t, id)
	}
}
