package httpapi

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// deviceGrantType is RFC 8628's grant_type for polling.
const deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

type deviceStartView struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// deviceKeysView holds the one key granted: management_key, or
// identity_key with its identity.
type deviceKeysView struct {
	ManagementKey string        `json:"management_key,omitempty"`
	IdentityKey   string        `json:"identity_key,omitempty"`
	Identity      *identityView `json:"identity,omitempty"`
}

// startDevice is RFC 8628's device authorization request.
func (s *server) startDevice(c *gin.Context) (int, any, error) {
	in, err := readOpenInput(c)
	if err != nil {
		return 0, nil, err
	}
	req := app.DeviceRequest{ClientName: in.text("client_name"), From: c.ClientIP(),
		KeyType: core.KeyType(in.text("key_type")), Identity: in.text("identity")}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	st, err := s.app.Device.Start(c.Request.Context(), req)
	if err != nil {
		return 0, nil, err
	}
	code := core.FormatUserCode(st.UserCode)
	return http.StatusOK, deviceStartView{
		DeviceCode: st.DeviceCode, UserCode: code,
		VerificationURI:         s.baseURL + verifyPath,
		VerificationURIComplete: s.baseURL + verifyPath + "?" + url.Values{"user_code": {code}}.Encode(),
		ExpiresIn:               int(st.ExpiresIn.Seconds()), Interval: int(st.Interval.Seconds()),
	}, nil
}

// pollDevice is RFC 8628's device access token request. Every refusal is
// in the RFC's shape, {"error": …}, which OAuth clients read.
func (s *server) pollDevice(c *gin.Context) (int, any, error) {
	in, err := readOpenInput(c)
	var bad *core.Error
	if errors.As(err, &bad) && bad.Kind == core.KindInvalid {
		return 0, nil, &core.OAuthError{Code: core.OAuthInvalidRequest, Description: bad.Error()}
	}
	if err != nil {
		return 0, nil, err
	}
	if grant := in.str("grant_type"); grant != nil && *grant != deviceGrantType {
		return 0, nil, &core.OAuthError{Code: core.OAuthUnsupportedGrantType, Description: "grant_type must be " + deviceGrantType + "."}
	}
	code := in.str("device_code")
	if err := in.err(); err != nil || code == nil {
		return 0, nil, &core.OAuthError{Code: core.OAuthInvalidRequest, Description: "device_code is required."}
	}
	keys, err := s.app.Device.Poll(c.Request.Context(), *code)
	if err != nil {
		return 0, nil, err
	}
	if keys.Identity == nil {
		return http.StatusOK, deviceKeysView{ManagementKey: keys.Key.Secret}, nil
	}
	ident := viewIdentity(*keys.Identity)
	return http.StatusOK, deviceKeysView{IdentityKey: keys.Key.Secret, Identity: &ident}, nil
}
