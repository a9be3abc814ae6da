package mediastream

import (
	"encoding/base64"
	"math/rand/v2"
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
		m, err := ParseMessage([]byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := parseFrame([]byte(text)); err != nil {
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
	media, _ := ParseMessage([]byte(twilioExamples["media"]))
	if m := media.Media; m.Track != "outbound" || m.Chunk != "1" || m.Timestamp != "5" || m.Payload != "no+JhoaJjpz+/w==" {
		t.Errorf("media = %+v", media.Media)
	}
	// Twilio's own media messages, spaced out, take the quick way.
	for _, name := range []string{"media", "agent media"} {
		f, ok := scanMedia([]byte(twilioExamples[name]))
		if !ok || f.event != EventMedia || string(f.payload) != "no+JhoaJjpz+/w==" || (name == "media") != (string(f.timestamp) == "5") {
			t.Errorf("%s: scanned %v: %+v", name, ok, f)
		}
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
		`{"event":"media","media":{"payload":"AAA"}}`,
		`{"event":"media","media":{"payload":"AA\nAA=="}}`, // base64 would skip the newline; JSON out would not
		`{"event":"media","media":{"payload":"AAAA"}} x`,
		`{"event":"media","media":{"payload":"AAAA"}`,
		`{"event":"media","media":null}`,
		`{"event":"dtmf","dtmf":{}}`,
		`{"event":"start"}`,
		`{"event":"mark"}`,
	} {
		if _, err := parseFrame([]byte(text)); err == nil {
			t.Errorf("%s: parsed", text)
		}
	}
	if m, err := parseFrame([]byte(`{"event":"something-new"}`)); err != nil || m.event != "something-new" {
		t.Errorf("an unknown event is passed on for the bridge to ignore: %v", err)
	}
}

// The quick way reads a media message as encoding/json does, or leaves it
// to encoding/json: never a different payload, timestamp or verdict.
func TestScanMediaAgreesWithEncodingJSON(t *testing.T) {
	quick := []string{
		`{"event":"media","streamSid":"MZ1","media":{"payload":"AAAA"}}`,
		` { "event" : "media" , "media" : { "timestamp" : "20" , "payload" : "AA==" } } `,
		`{"media":{"payload":"AAAA","track":"inbound","chunk":"2","timestamp":"40"},"sequenceNumber":"3","event":"media"}`,
		`{"event":"media","media":{"payload":""}}`,
		`{"event":"media","media":{"payload":"AAAA"},"media":{"timestamp":"7"}}`,      // one Media, both fields
		`{"event":"media","streamSid":"M` + "\xff" + `Z","media":{"payload":"AAAA"}}`, // relayed as it came
	}
	for _, text := range quick {
		if _, ok := scanMedia([]byte(text)); !ok {
			t.Errorf("%s: not the quick way", text)
		}
	}
	texts := append(quick,
		`{"event":"mark","media":{"payload":"AAAA"}}`,
		`{"event":"media","event":"dtmf","media":{"payload":"AAAA"}}`,
		`{"Event":"media","media":{"payload":"AAAA"}}`, // encoding/json ignores case
		`{"event":"media","media":{"Payload":"AAAA"}}`,
		`{"event":"media","media":{"payload":"A\/AA"}}`,
		`{"event":"media","media":{"payload":"AAAA","extra":1}}`,
		`{"event":"media","media":{}}`,
		`{"event":"media","media":{"payload":"AA`+"\x01"+`A"}}`,
		`{"event":"media","media":{"payload":"AAAA"}}{}`,
		`{"event":"media","media":{"payload":"AAAA"},}`,
		`{"event":"media" "media":{"payload":"AAAA"}}`,
		`{"event":"media","media":{"payload":"AAAA"}`,
		`{"event":"media","media":{"payload":"AAAA"`,
		`{"event":"media","media":{"payload":"AAAA}}`,
		`{"event":"médïa","media":{"payload":"AAAA"}}`,
		``, `{}`, `[]`, `"media"`,
	)
	for _, text := range texts {
		f, ok := scanMedia([]byte(text))
		m, err := ParseMessage([]byte(text))
		if !ok {
			continue
		}
		if err != nil || m.Event != f.event || m.Media == nil || m.Media.Payload != string(f.payload) || m.Media.Timestamp != string(f.timestamp) {
			t.Errorf("%s: scanned %+v, encoding/json %+v (%v)", text, f, m, err)
		}
	}
}

func TestValidBase64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const chars = "AZaz09+/=-_ !"
	for range 100_000 {
		p := make([]byte, r.IntN(10))
		for i := range p {
			p[i] = chars[r.IntN(len(chars))]
		}
		_, err := base64.StdEncoding.DecodeString(string(p))
		if validBase64(p) != (err == nil) {
			t.Fatalf("%q: valid %v, decoding: %v", p, validBase64(p), err)
		}
	}
}

// The bridge's cost of reading a media frame: no allocation.
func TestParseFrameDoesNotAllocate(t *testing.T) {
	text := []byte(twilioExamples["media"])
	if n := testing.AllocsPerRun(100, func() { _, _ = parseFrame(text) }); n != 0 {
		t.Errorf("%v allocations a frame", n)
	}
}
