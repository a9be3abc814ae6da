package mediastream

import (
	"testing"
)

// Twilio's own examples of the messages, from
// https://www.twilio.com/docs/voice/media-streams/websocket-messages
// (the account, call and stream ids are theirs: placeholders).
var twilioExamples = map[string]string{
	"connected": `{"event": "connected", "protocol": "Call", "version": "1.0.0"}`,
	"start": `{
  "event": "start",
  "sequenceNumber": "1",
  "start": {
    "accountSid": "ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "callSid": "CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "tracks": [ "inbound" ],
    "mediaFormat": { "encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1 },
    "customParameters": { "FirstName": "Jane", "LastName": "Doe", "RemoteParty": "Bob" }
  },
  "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"
}`,
	"media": `{
  "event": "media",
  "sequenceNumber": "3",
  "media": { "track": "outbound", "chunk": "1", "timestamp": "5", "payload": "no+JhoaJjpz+/w==" },
  "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"
}`,
	"dtmf": `{
  "event": "dtmf",
  "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
  "sequenceNumber": "5",
  "dtmf": { "track": "inbound_track", "digit": "1" }
}`,
	"mark": `{
  "event": "mark",
  "sequenceNumber": "4",
  "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
  "mark": { "name": "my label" }
}`,
	"stop": `{
  "event": "stop",
  "sequenceNumber": "5",
  "stop": { "accountSid": "ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "callSid": "CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX" },
  "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"
}`,
	// what an agent sends back
	"agent media": `{"event": "media", "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "media": {"payload": "no+JhoaJjpz+/w=="}}`,
	"agent mark":  `{"event": "mark", "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "mark": {"name": "my label"}}`,
	"agent clear": `{"event": "clear", "streamSid": "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"}`,
}

func TestParseTwilioExamples(t *testing.T) {
	for name, text := range twilioExamples {
		m, err := parse([]byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.Event == EventConnected || m.Event == EventClear {
			continue
		}
		if m.StreamSid != "MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX" {
			t.Errorf("%s: streamSid %q", name, m.StreamSid)
		}
	}
	start, _ := ParseMessage([]byte(twilioExamples["start"]))
	if s := start.Start; s.CallSid != "CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX" || s.MediaFormat != PhoneFormat ||
		len(s.Tracks) != 1 || s.Tracks[0] != "inbound" || s.CustomParameters["RemoteParty"] != "Bob" {
		t.Errorf("start = %+v", s)
	}
	media, _ := parse([]byte(twilioExamples["media"]))
	if media.Media.Track != "outbound" || media.Media.Chunk != "1" || media.Media.Timestamp != "5" || len(media.Media.audio) != 10 {
		t.Errorf("media = %+v", media.Media)
	}
	dtmf, _ := ParseMessage([]byte(twilioExamples["dtmf"]))
	mark, _ := ParseMessage([]byte(twilioExamples["mark"]))
	stop, _ := ParseMessage([]byte(twilioExamples["stop"]))
	if dtmf.DTMF.Digit != "1" || dtmf.DTMF.Track != "inbound_track" || mark.Mark.Name != "my label" ||
		stop.Stop.CallSid != "CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX" {
		t.Errorf("dtmf %+v, mark %+v, stop %+v", dtmf.DTMF, mark.Mark, stop.Stop)
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	for _, text := range []string{
		`{not json`,
		`{"streamSid":"MZ1"}`,
		`{"event":"media","streamSid":"MZ1"}`,
		`{"event":"media","media":{"payload":"not base64!"}}`,
		`{"event":"dtmf","dtmf":{}}`,
		`{"event":"start"}`,
		`{"event":"mark"}`,
	} {
		if _, err := parse([]byte(text)); err == nil {
			t.Errorf("%s: parsed", text)
		}
	}
	if m, err := parse([]byte(`{"event":"something-new"}`)); err != nil || m.Event != "something-new" {
		t.Errorf("an unknown event is passed on for the bridge to ignore: %v", err)
	}
}
