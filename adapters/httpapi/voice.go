package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// MediaBridge carries a streamed call's audio between the provider's
// WebSocket and the agent's (adapters/mediastream, wired by the service).
type MediaBridge interface {
	// DialAgent opens the agent's WebSocket, its upgrade signed with
	// secrets, through the outbound-destination policy and within
	// app.AgentConnectTimeout. Its error names a category, never the
	// remote's words.
	DialAgent(ctx context.Context, url string, secrets []string) (MediaAgent, error)
}

// MediaAgent is an agent's WebSocket, dialled.
type MediaAgent interface {
	// Bridge accepts the provider's upgrade on w and r and relays both
	// ways until the call ends or ctx does, recording when asked; it
	// closes both sockets.
	Bridge(ctx context.Context, w http.ResponseWriter, r *http.Request, params map[string]string, record bool) app.StreamResult
	// Close drops the agent's socket when no bridge runs.
	Close()
}

type streamView struct {
	ConnectedDT      apiTime `json:"connected_dt"`
	FramesFromCaller int64   `json:"frames_from_caller"`
	FramesToCaller   int64   `json:"frames_to_caller"`
	FramesDropped    int64   `json:"frames_dropped"`
	DTMF             int64   `json:"dtmf"`
}

func viewStream(s *core.CallStream) *streamView {
	if s == nil {
		return nil
	}
	return &streamView{ConnectedDT: apiTime(s.ConnectedAt), FramesFromCaller: s.FramesFromCaller, FramesToCaller: s.FramesToCaller,
		FramesDropped: s.FramesDropped, DTMF: s.DTMF}
}

// media is the provider's media WebSocket for one call (GET /media/{token}/):
// the provider's signature over the URL, then the one-time token, are
// checked before the upgrade (403 and 404); then the agent is dialled
// (502 when it cannot be reached: the provider goes on to the spoken
// fallback) and the two are bridged.
func (s *server) media(c *gin.Context) {
	ctx := c.Request.Context()
	// Twilio signs the wss URL it was given, with no parameters.
	if !s.app.Calls.VerifyMedia(core.MediaURL(s.baseURL, c.Param("token")), c.GetHeader("X-Twilio-Signature")) {
		s.fail(c, core.Forbidden("The request's signature is missing or wrong."))
		return
	}
	target, err := s.app.Calls.OpenStream(ctx, c.Param("token"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if s.mediaBridge == nil {
		s.fail(c, core.Unavailable("No media bridge is configured."))
		return
	}
	agent, err := s.mediaBridge.DialAgent(ctx, target.AgentURL, target.Secrets)
	if err != nil {
		s.log.Warn("voice: the agent's WebSocket could not be reached", "call", target.Call.ID, "err", err)
		if err := s.app.Calls.StreamEnded(ctx, target, app.StreamResult{Unreachable: true}); err != nil {
			s.log.Error("voice: recording an unreachable agent failed", "call", target.Call.ID, "err", err)
		}
		s.fail(c, core.Unavailable("The agent cannot be reached."))
		return
	}
	// A hijacked connection's request context outlives shutdown: the
	// bridge ends when the service closes.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-s.closing:
			stop()
		case <-ctx.Done():
		}
	}()
	bridged, done, err := s.app.Calls.StreamConnected(ctx, target)
	if err != nil {
		agent.Close()
		s.fail(c, err)
		return
	}
	result := agent.Bridge(bridged, c.Writer, c.Request, target.CustomParameters, target.Record)
	done()
	if err := s.app.Calls.StreamEnded(ctx, target, result); err != nil {
		s.log.Error("voice: recording a stream's end failed", "call", target.Call.ID, "err", err)
	}
}

// placeCall places a call from an identity's number (POST /api/calls/).
func (s *server) placeCall(c *gin.Context) (int, any, error) {
	identity, err := identityParam(c)
	if err != nil {
		return 0, nil, err
	}
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	pi := app.PlaceInput{Identity: identity, PlacedCall: core.PlacedCall{To: in.text("to"), Mode: core.VoiceMode(in.text("mode")),
		StreamURL: in.text("stream_url"), ResponseURL: in.text("response_url")}}
	if id := in.text("identity"); id != "" && pi.Identity == "" {
		pi.Identity = id
	}
	if rec := in.boolean("record"); rec != nil {
		pi.Record = *rec
	}
	if in.str("to") == nil {
		in.problems.Add("to", "This field is required.")
	}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	call, err := s.app.Calls.Place(c.Request.Context(), principal(c), pi)
	return http.StatusCreated, s.viewCall(call), err
}

func (s *server) recoverCall(c *gin.Context, id string) (int, any, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, nil, err
	}
	call, err := s.app.Calls.Get(c.Request.Context(), principal(c), n)
	return http.StatusCreated, s.viewCall(call), err
}

// hangUpCall ends a call in progress (POST /api/calls/{id}/hangup/).
func (s *server) hangUpCall(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Call")
	if err != nil {
		return 0, nil, err
	}
	call, err := s.app.Calls.HangUp(c.Request.Context(), principal(c), id)
	return http.StatusOK, s.viewCall(call), err
}

// rotateStreamSecret gives an identity's voice agent a new stream secret.
func (s *server) rotateStreamSecret(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Identity")
	if err != nil {
		return 0, nil, err
	}
	v, err := s.app.Phone.RotateStreamSecret(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewVoiceAgent(v), err
}
