package twilio

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Signature is the X-Twilio-Signature of a form POST to fullURL, computed
// as Twilio's own helper libraries check it (twilio-python's
// RequestValidator.compute_signature, twilio-node's
// getExpectedTwilioSignature): the URL, then for each parameter name in
// sorted order, each of its distinct values in sorted order as name
// immediately followed by value; HMAC-SHA1 keyed with the auth token;
// base64. twilio-go's RequestValidator signs only the first value of each
// name, which would let anyone append values to a signed request.
func Signature(authToken, fullURL string, params url.Values) string {
	mac := hmac.New(sha1.New, []byte(authToken))
	io.WriteString(mac, fullURL)
	for _, name := range slices.Sorted(maps.Keys(params)) {
		values := slices.Clone(params[name])
		slices.Sort(values)
		for _, v := range slices.Compact(values) {
			io.WriteString(mac, name)
			io.WriteString(mac, v)
		}
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyWebhook implements ports.Telephony for form POSTs. Like Twilio's
// helper libraries it accepts the signature of the URL with or without its
// scheme's default port, because Twilio signs either.
func (t *Twilio) VerifyWebhook(fullURL string, params url.Values, signature string) bool {
	for _, u := range signedURLs(fullURL) {
		if hmac.Equal([]byte(Signature(t.authToken, u, params)), []byte(signature)) {
			return true
		}
	}
	return false
}

var defaultPorts = map[string]string{"http": "80", "https": "443"}

// signedURLs are the URLs Twilio may have signed for a request to fullURL:
// the URL itself and the URL with its port removed, or with the scheme's
// default port added when it has none. Only the host changes; the rest is
// kept byte for byte, since Twilio signs it as configured.
func signedURLs(fullURL string) []string {
	u, err := url.Parse(fullURL)
	if err != nil || u.Host == "" || u.User != nil {
		return []string{fullURL}
	}
	origin := u.Scheme + "://" + u.Host
	rest, ok := strings.CutPrefix(fullURL, origin)
	if !ok {
		return []string{fullURL}
	}
	host := u.Host + ":" + defaultPorts[u.Scheme]
	if port := u.Port(); port != "" {
		host = strings.TrimSuffix(u.Host, ":"+port)
	} else if defaultPorts[u.Scheme] == "" {
		return []string{fullURL}
	}
	return []string{fullURL, u.Scheme + "://" + host + rest}
}
