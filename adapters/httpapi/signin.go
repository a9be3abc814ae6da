package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/core"
)

// Paths of the sign-in and device routes, for the routes and for the
// absolute URLs and cookies that name them.
const (
	devicePath   = "/api/auth/device/"
	verifyPath   = devicePath + "verify/"
	callbackPath = devicePath + "callback/"
)

// signInRoutes are the routes that work without a key: password sign-in,
// token refresh, device login and its verification page. Each request
// counts against the client's address.
func (s *server) signInRoutes(api *gin.RouterGroup) {
	tokens := api.Group("/auth", s.throttleAddress(s.fail), noStore)
	tokens.POST("/token/", s.handle(s.obtainTokens))
	tokens.POST("/token/refresh/", s.handle(s.refreshToken))
	tokens.POST("/device/", s.handle(s.startDevice))
	tokens.POST("/device/token/", s.handle(s.pollDevice))

	pages := api.Group("/auth/device", s.throttleAddress(s.failPage), noStore)
	pages.GET("/verify/", s.verifyPage)
	pages.POST("/verify/", s.verifySubmit)
	pages.GET("/callback/", s.externalCallback)
}

// noStore keeps credentials out of caches (RFC 6749 §5.1).
func noStore(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Next()
}

type tokenPairView struct {
	Access  string `json:"access"`
	Refresh string `json:"refresh"`
}

// required reads text fields that must be present and not blank.
func (in *input) required(names ...string) []string {
	values := make([]string, len(names))
	for i, name := range names {
		if v := in.str(name); v != nil && strings.TrimSpace(*v) != "" {
			values[i] = *v
		} else if !in.problems.Has(name) {
			in.problems.Add(name, "This field is required.")
		}
	}
	return values
}

// obtainTokens signs in with an email and password.
func (s *server) obtainTokens(c *gin.Context) (int, any, error) {
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	fields := in.required("email", "password")
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	if err := s.guessAllowed(c, fields[0]); err != nil {
		return 0, nil, err
	}
	pair, err := s.app.Auth.Login(c.Request.Context(), fields[0], fields[1])
	if core.KindOf(err) == core.KindUnauthorized {
		s.wrongGuess(c, fields[0])
	}
	return http.StatusOK, tokenPairView{Access: pair.Access, Refresh: pair.Refresh}, err
}

func (s *server) refreshToken(c *gin.Context) (int, any, error) {
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	fields := in.required("refresh")
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	pair, err := s.app.Auth.Refresh(c.Request.Context(), fields[0])
	return http.StatusOK, tokenPairView{Access: pair.Access, Refresh: pair.Refresh}, err
}
