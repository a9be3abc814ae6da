package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// replayedHeader marks an answer given from an idempotency key.
const replayedHeader = "Idempotent-Replayed"

// recoverer answers the repeat of a request that made its effect (effectID
// names what it created) but ended before its answer was stored: with the
// effect as it is now, in the shape and status of the first answer.
type recoverer func(c *gin.Context, effectID string) (int, any, error)

// idempotent makes h, a route that creates or sends, honour the
// Idempotency-Key header (see app.Idempotency and docs/api.md). limit
// bounds the body read to fingerprint the request, as h's own reading does.
func (s *server) idempotent(limit int64, recover recoverer, h handler) handler {
	return s.idempotentRoute(limit, recover, true, h)
}

// idempotentVault is idempotent for routes whose answer shows a vault
// value or a sealed secret (a webhook's): the answer's body is not kept (it
// would lie in the database unsealed), so a repeat shows the created
// object as it now is.
func (s *server) idempotentVault(recover recoverer, h handler) handler {
	return s.idempotentRoute(maxBodyBytes, recover, false, h)
}

func (s *server) idempotentRoute(limit int64, recover recoverer, keepBody bool, h handler) handler {
	return func(c *gin.Context) (int, any, error) {
		keys, present := c.Request.Header[http.CanonicalHeaderKey(core.IdempotencyHeader)]
		if !present {
			return h(c)
		}
		if len(keys) != 1 {
			return 0, nil, core.Invalid(core.IdempotencyHeader, "Send one %s header.", core.IdempotencyHeader)
		}
		if err := core.CheckIdempotencyKey(keys[0]); err != nil {
			return 0, nil, err
		}
		fingerprint, err := requestFingerprint(c, limit)
		if err != nil {
			return 0, nil, err
		}
		ctx := c.Request.Context()
		req, err := s.app.Idempotency.Begin(ctx, principal(c), c.Request.Method+" "+c.FullPath(), keys[0], fingerprint)
		if err != nil {
			return 0, nil, err
		}
		switch req.Outcome {
		case core.IdempotencyReplay:
			c.Header(replayedHeader, "true")
			if req.Record.Body == nil {
				return recover(c, req.Record.EffectID)
			}
			return req.Record.Status, json.RawMessage(req.Record.Body), nil
		case core.IdempotencyRecover:
			c.Header(replayedHeader, "true")
			return recover(c, req.Record.EffectID)
		}
		c.Request = c.Request.WithContext(ports.WithClaim(ctx, req.Claim))
		status, body, err := h(c)
		if err != nil {
			if rerr := s.app.Idempotency.Release(ctx, req.Claim); rerr != nil {
				s.log.Error("releasing an idempotency key", "route", c.FullPath(), "err", rerr)
			}
			return status, body, err
		}
		raw, err := marshalJSON(body)
		if err != nil {
			return 0, nil, err
		}
		kept := raw
		if !keepBody {
			kept = nil
		}
		// An answer that cannot be stored is still the request's answer; a
		// repeat then finds the effect and shows it (IdempotencyRecover).
		if err := s.app.Idempotency.Answer(ctx, req.Claim, status, kept); err != nil {
			s.log.Error("storing an idempotent answer", "route", c.FullPath(), "err", err)
		}
		return status, json.RawMessage(raw), nil
	}
}

// marshalJSON encodes v as every answer is (PureJSON: no HTML escaping).
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// requestFingerprint is a digest of what a request asks: its method, path,
// query and body. A multipart body is read as its fields and files (in
// order of name), since a client's retry picks a new boundary; any other
// body (at most limit bytes) is read whole and put back for the handler.
func requestFingerprint(c *gin.Context, limit int64) ([]byte, error) {
	r := c.Request
	h := sha256.New()
	writeField(h, r.Method)
	writeField(h, r.URL.Path)
	writeField(h, r.URL.RawQuery)
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	writeField(h, mediaType)
	if mediaType == "multipart/form-data" {
		// The handler's own read finds the form parsed.
		in, err := readInputLimit(c, limit, core.TooLarge("The request is larger than %d bytes.", limit))
		if err != nil {
			return nil, err
		}
		for _, name := range slices.Sorted(maps.Keys(in.form)) {
			writeField(h, name)
			for _, v := range in.form[name] {
				writeField(h, v)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(in.files)) {
			writeField(h, name)
			for _, fh := range in.files[name] {
				writeField(h, fh.Filename)
				writeField(h, fh.Header.Get("Content-Type"))
				writeField(h, strconv.FormatInt(fh.Size, 10))
				f, err := fh.Open()
				if err != nil {
					return nil, err
				}
				_, err = io.Copy(h, f)
				f.Close()
				if err != nil {
					return nil, err
				}
			}
		}
		return h.Sum(nil), nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, r.Body, limit))
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return nil, errTooLarge
	}
	if err != nil {
		return nil, malformed("Unreadable body.")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.Write(body)
	return h.Sum(nil), nil
}

// writeField writes s length-prefixed, so fields cannot run into each other.
func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// The recoverers of the idempotent routes: each shows what its route
// created as the route's answer does.

func (s *server) recoverMessage(c *gin.Context, id string) (int, any, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, nil, err
	}
	m, err := s.app.Reading.Message(c.Request.Context(), principal(c), n)
	return http.StatusCreated, s.viewMessage(m), err
}

func (s *server) recoverSMS(c *gin.Context, id string) (int, any, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, nil, err
	}
	m, err := s.app.SMS.Get(c.Request.Context(), principal(c), n)
	return http.StatusCreated, viewSMS(m), err
}

func (s *server) recoverIdentity(c *gin.Context, id string) (int, any, error) {
	ident, err := s.app.Identities.Get(c.Request.Context(), principal(c), id)
	return http.StatusCreated, viewIdentity(ident), err
}

// recoverProvision shows the identity whose number was bought, as the
// route answers.
func (s *server) recoverProvision(c *gin.Context, _ string) (int, any, error) {
	ident, err := s.app.Identities.Get(c.Request.Context(), principal(c), c.Param("uuid"))
	return http.StatusOK, viewIdentity(ident), err
}

func (s *server) recoverInbox(c *gin.Context, id string) (int, any, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, nil, err
	}
	in, err := s.app.Inboxes.Inbox(c.Request.Context(), principal(c), n)
	return http.StatusCreated, viewInbox(in), err
}

func (s *server) recoverPassword(c *gin.Context, id string) (int, any, error) {
	e, err := s.app.Vault.GetPassword(c.Request.Context(), principal(c), id)
	return http.StatusCreated, viewPassword(e), err
}

func (s *server) recoverSecret(c *gin.Context, id string) (int, any, error) {
	sec, err := s.app.Vault.GetSecret(c.Request.Context(), principal(c), id)
	return http.StatusCreated, viewSecret(sec), err
}

func (s *server) recoverContact(c *gin.Context, id string) (int, any, error) {
	ct, err := s.app.Contacts.Get(c.Request.Context(), principal(c), id)
	return http.StatusCreated, viewContact(ct), err
}

func (s *server) recoverAttachment(c *gin.Context, id string) (int, any, error) {
	a, err := s.app.Reading.Attachment(c.Request.Context(), principal(c), id)
	return http.StatusCreated, s.viewAttachment(a.Attachment), err
}

// recoverWebhook shows the webhook with its secret, as creating it does.
func (s *server) recoverWebhook(c *gin.Context, id string) (int, any, error) {
	w, err := s.app.Webhooks.Secret(c.Request.Context(), principal(c), id)
	return http.StatusCreated, viewWebhook(w), err
}
