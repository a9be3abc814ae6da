package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"

	"github.com/callsign/callsign/adapters/httpapi"
	"github.com/callsign/callsign/adapters/mediastream"
	"github.com/callsign/callsign/adapters/simtel"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// mediaBridge is the API's MediaBridge over adapters/mediastream: agents
// are dialled through the outbound-destination policy of webhooks, and a
// recording spools in an unlinked file of the data directory until the
// call ends.
type mediaBridge struct {
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	spool string
	log   *slog.Logger
}

func (m mediaBridge) DialAgent(ctx context.Context, url string, secrets []string) (httpapi.MediaAgent, error) {
	conn, err := mediastream.DialAgent(ctx, url, mediastream.DialOptions{Secrets: secrets, DialContext: m.dial,
		Timeout: app.AgentConnectTimeout})
	if err != nil {
		return nil, err
	}
	return &mediaAgent{m: m, conn: conn}, nil
}

type mediaAgent struct {
	m    mediaBridge
	conn *websocket.Conn
}

func (a *mediaAgent) Close() { _ = a.conn.CloseNow() }

func (a *mediaAgent) Bridge(ctx context.Context, w http.ResponseWriter, r *http.Request, params map[string]string, record bool) app.StreamResult {
	provider, err := mediastream.Accept(w, r)
	if err != nil {
		a.Close()
		return app.StreamResult{ProviderEnded: true}
	}
	var rec *mediastream.Recorder
	var spool *os.File
	if record {
		if spool, rec, err = a.m.recorder(); err != nil {
			a.m.log.Error("voice: the call cannot be recorded", "err", err)
		} else {
			defer spool.Close()
		}
	}
	st := mediastream.Bridge(ctx, provider, a.conn, mediastream.BridgeOptions{CustomParameters: params, Recorder: rec, Log: a.m.log})
	res := app.StreamResult{Stream: core.CallStream{ConnectedAt: st.ConnectedAt, FramesFromCaller: st.FramesFromCaller,
		FramesToCaller: st.FramesToCaller, FramesDropped: st.FramesDropped, DTMF: st.DTMF},
		DeadlinePassed: st.Reason == mediastream.ReasonContext && errors.Is(ctx.Err(), context.DeadlineExceeded)}
	switch st.Reason {
	case mediastream.ReasonStop, mediastream.ReasonProviderClosed, mediastream.ReasonProviderMalformed:
		res.ProviderEnded = true
	}
	if rec != nil {
		if res.Recording, err = finish(rec, spool); err != nil {
			a.m.log.Error("voice: the call's recording was lost", "err", err)
		}
	}
	return res
}

// MaxRecording bounds what a recording keeps: the first 30 minutes of the
// call, 55 MiB of WAV, since the finished file is read back whole to be
// stored as one value.
const MaxRecording = 30 * time.Minute

// recorder is a recorder writing to an unlinked file in the spool
// directory: nothing is left behind if the process dies.
func (m mediaBridge) recorder() (*os.File, *mediastream.Recorder, error) {
	f, err := os.CreateTemp(m.spool, "recording-*.wav")
	if err != nil {
		return nil, nil, err
	}
	_ = os.Remove(f.Name())
	rec, err := mediastream.NewRecorder(f, MaxRecording)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, rec, nil
}

// finish completes a recording's WAV and reads it back.
func finish(rec *mediastream.Recorder, f *os.File) ([]byte, error) {
	if err := rec.Close(); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// simPlayer plays the simulator's caller (ports.MediaPlayer), its upgrade
// signed as the simulator signs.
type simPlayer struct{ sim *simtel.Sim }

func (p simPlayer) Play(ctx context.Context, mediaURL string, m ports.PlayMedia) (ports.PlayedMedia, error) {
	header := http.Header{"X-Twilio-Signature": {p.sim.SignMedia(mediaURL)}}
	st, err := mediastream.PlayProvider(ctx, mediaURL, header, mediastream.PlayOptions{CallSID: m.CallSID, StreamSID: "MZ" + m.CallSID,
		AccountSID: "ACsimulator", Duration: m.Duration, Audio: m.Audio, Digits: m.Digits, Realtime: true, EchoWait: echoWait})
	return ports.PlayedMedia{FramesSent: st.FramesSent, FramesReceived: st.FramesReceived}, err
}

func (p simPlayer) Connect(ctx context.Context, a, b ports.MediaLeg) error {
	leg := func(l ports.MediaLeg) mediastream.Leg {
		return mediastream.Leg{URL: l.MediaURL, Header: http.Header{"X-Twilio-Signature": {p.sim.SignMedia(l.MediaURL)}},
			CallSID: l.CallSID, StreamSID: "MZ" + l.CallSID, AccountSID: "ACsimulator"}
	}
	return mediastream.Connect(ctx, leg(a), leg(b))
}

// echoWait is how long the simulated caller waits, after its last frame,
// for an echoing agent's last frames.
const echoWait = 2 * time.Second
