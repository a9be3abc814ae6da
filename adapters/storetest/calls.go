package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func callTo(p core.PhoneNumber, from, sid string, at time.Time) core.Call {
	return core.Call{AccountID: p.AccountID, IdentityID: p.IdentityID, PhoneID: p.ID, PhoneNumber: p.Number, Direction: core.Incoming,
		FromNumber: from, ToNumber: p.Number, Status: core.CallRinging, StartedAt: at, DurationSeconds: -1, ProviderSID: sid}
}

func callIDs(cs []core.Call) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func testCalls(t *testing.T, f *fixture) {
	a := f.account()
	ann, _ := f.identity(a.ID)
	bob, _ := f.identity(a.ID)
	pa, pb := f.phone(ann), f.phone(bob)
	sid := "CA" + uuid.NewString()[:8]
	first, created, err := f.s.SaveCall(f.ctx, callTo(pa, "+14155550100", sid, f.tick()))
	f.must(err)
	if !created || first.ID == 0 {
		t.Fatalf("saved: %v %+v", created, first)
	}
	again, created, err := f.s.SaveCall(f.ctx, callTo(pa, "+14155550100", sid, f.tick()))
	if err != nil || created || again.ID != first.ID || !again.StartedAt.Equal(first.StartedAt) {
		t.Fatalf("the same SID again: %v %+v %v", created, again, err)
	}
	if got, err := f.s.Call(f.ctx, a.ID, first.ID); err != nil || got != first {
		t.Fatalf("read back %+v, %v; want %+v", got, err, first)
	}
	other := f.account()
	_, err = f.s.Call(f.ctx, other.ID, first.ID)
	wantKind(t, err, core.KindNotFound)

	// Reports move a call forward only; the end is recorded once.
	report := func(status core.CallStatus, seconds int) bool {
		found, err := f.s.ReportCall(f.ctx, core.CallReport{ProviderSID: sid, Status: status, At: f.tick(), DurationSeconds: seconds})
		f.must(err)
		return found
	}
	report(core.CallInProgress, -1)
	ended := f.now.Add(time.Second)
	report(core.CallDone, 42)
	report(core.CallInProgress, -1)
	report(core.CallBusy, -1)
	got, _ := f.s.Call(f.ctx, a.ID, first.ID)
	if got.Status != core.CallDone || got.DurationSeconds != 42 || !got.EndedAt.Equal(ended) {
		t.Fatalf("after the reports: %+v", got)
	}
	if found, err := f.s.ReportCall(f.ctx, core.CallReport{ProviderSID: "CAnone", Status: core.CallDone, At: f.tick()}); err != nil || found {
		t.Fatalf("an unknown call: %v %v", found, err)
	}

	// Lists: newest first, scope, started after.
	second, _, err := f.s.SaveCall(f.ctx, callTo(pb, "+14155550101", "CA"+uuid.NewString()[:8], f.tick()))
	f.must(err)
	list := func(scope core.Scope, after *time.Time) []int64 {
		t.Helper()
		cs, total, err := f.s.Calls(f.ctx, ports.CallFilter{Scope: scope, StartedAfter: after, Page: ports.Page{Limit: 50, Count: true}})
		f.must(err)
		if total != len(cs) {
			t.Fatalf("total %d for %d calls", total, len(cs))
		}
		return callIDs(cs)
	}
	if got := list(core.Scope{AccountID: a.ID}, nil); !slices.Equal(got, []int64{second.ID, first.ID}) {
		t.Fatalf("the account's calls: %v", got)
	}
	if got := list(core.Scope{AccountID: a.ID, IdentityID: ann.ID}, nil); !slices.Equal(got, []int64{first.ID}) {
		t.Fatalf("ann's calls: %v", got)
	}
	if got := list(core.Scope{AccountID: a.ID}, &first.StartedAt); !slices.Equal(got, []int64{second.ID}) {
		t.Fatalf("calls after the first: %v", got)
	}
	if got := list(core.Scope{AccountID: other.ID}, nil); len(got) != 0 {
		t.Fatalf("another account's calls: %v", got)
	}

	// Simulated hang-ups: due ones, then when the next is due.
	start := f.tick()
	soon := callTo(pa, "+14155550102", "CA"+uuid.NewString()[:8], start)
	soon.Status, soon.HangUpAt = core.CallInProgress, start.Add(2*time.Second)
	later := soon
	later.ProviderSID, later.HangUpAt = "CA"+uuid.NewString()[:8], start.Add(5*time.Second)
	soon, _, err = f.s.SaveCall(f.ctx, soon)
	f.must(err)
	later, _, err = f.s.SaveCall(f.ctx, later)
	f.must(err)
	due, next, err := f.s.SimulatedHangUps(f.ctx, start.Add(3*time.Second))
	f.must(err)
	if !slices.Equal(callIDs(due), []int64{soon.ID}) || !next.Equal(later.HangUpAt) || !due[0].HangUpAt.Equal(soon.HangUpAt) {
		t.Fatalf("due %v, next %v", callIDs(due), next)
	}
	_, err = f.s.ReportCall(f.ctx, core.CallReport{ProviderSID: soon.ProviderSID, Status: core.CallDone, At: soon.HangUpAt, DurationSeconds: 2})
	f.must(err)
	due, next, err = f.s.SimulatedHangUps(f.ctx, start.Add(3*time.Second))
	f.must(err)
	if len(due) != 0 || !next.Equal(later.HangUpAt) {
		t.Fatalf("after the hang-up: due %v, next %v", callIDs(due), next)
	}

	// call.received for each call stored, call.completed for each end.
	want := []string{"call.received", "call.completed", "call.received", "call.received", "call.received", "call.completed"}
	if got := eventTypes(f.events(core.Scope{AccountID: a.ID}, 0, "call.*")); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}

	// Calls go with their identity.
	f.must(f.s.DeleteIdentity(f.ctx, a.ID, bob.ID))
	_, err = f.s.Call(f.ctx, a.ID, second.ID)
	wantKind(t, err, core.KindNotFound)
}

func testCallStreams(t *testing.T, f *fixture) {
	a := f.account()
	ann, _ := f.identity(a.ID)
	pa := f.phone(ann)
	in := callTo(pa, "+14155550100", "CA"+uuid.NewString()[:8], f.tick())
	in.Mode, in.AgentURL, in.Record, in.MediaTokenHash = core.VoiceStream, "wss://agent.example/", true, core.MediaTokenHash("t1")
	c, _, err := f.s.SaveCall(f.ctx, in)
	f.must(err)
	out := callTo(pa, "+14155550101", "pending-1", f.tick())
	out.Direction, out.FromNumber, out.ToNumber, out.Status = core.Outgoing, pa.Number, "+14155550101", core.CallQueued
	placed, _, err := f.s.SaveCall(f.ctx, out)
	f.must(err)
	f.must(f.s.SetCallProvider(f.ctx, placed.ID, "CAplaced"+uuid.NewString()[:8]))
	if n, err := f.s.ActiveCalls(f.ctx, a.ID); err != nil || n != 2 {
		t.Fatalf("active calls: %d, %v", n, err)
	}
	if u, err := f.s.Usage(f.ctx, a.ID, "", f.now.Add(-time.Hour), []core.Quota{core.QuotaSendsPerHour}); err != nil ||
		u.Used[core.QuotaSendsPerHour] != 1 {
		t.Fatalf("a placed call is one send: %+v, %v", u, err)
	}

	// The token opens one stream.
	claimed, err := f.s.ClaimMediaToken(f.ctx, core.MediaTokenHash("t1"))
	if err != nil || claimed.ID != c.ID || claimed.AgentURL != in.AgentURL || !claimed.Record || claimed.MediaTokenHash != "" {
		t.Fatalf("claimed %+v, %v", claimed, err)
	}
	_, err = f.s.ClaimMediaToken(f.ctx, core.MediaTokenHash("t1"))
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.ClaimMediaToken(f.ctx, "")
	wantKind(t, err, core.KindNotFound)

	connected := f.tick()
	f.must(f.s.StreamConnected(f.ctx, c.ID, connected))
	wav := []byte("RIFF....WAVE")
	st := core.CallStream{ConnectedAt: connected, EndedAt: f.tick(), FramesFromCaller: 50, FramesToCaller: 49, FramesDropped: 1, DTMF: 2}
	f.must(f.s.StreamEnded(f.ctx, c.ID, st, core.EndCompleted, wav))
	got, _ := f.s.Call(f.ctx, a.ID, c.ID)
	if got.Stream == nil || *got.Stream != st || got.EndReason != core.EndCompleted || got.RecordingBytes != int64(len(wav)) {
		t.Fatalf("after the stream: %+v %+v", got, got.Stream)
	}
	if b, err := f.s.CallRecording(f.ctx, a.ID, c.ID); err != nil || string(b) != string(wav) {
		t.Fatalf("recording %q, %v", b, err)
	}
	_, err = f.s.CallRecording(f.ctx, f.account().ID, c.ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.CallRecording(f.ctx, a.ID, placed.ID)
	wantKind(t, err, core.KindNotFound)
	if u, err := f.s.Usage(f.ctx, a.ID, "", f.now, []core.Quota{core.QuotaStorage}); err != nil || u.Used[core.QuotaStorage] != int64(len(wav)) {
		t.Fatalf("the recording is stored bytes: %+v, %v", u, err)
	}

	// The first end reason stands.
	f.must(f.s.NoteEndReason(f.ctx, placed.ID, core.EndHangUpAPI))
	f.must(f.s.NoteEndReason(f.ctx, placed.ID, core.EndMaxDuration))
	got, _ = f.s.Call(f.ctx, a.ID, placed.ID)
	if _, err := f.s.ReportCall(f.ctx, core.CallReport{ProviderSID: got.ProviderSID, Status: core.CallDone, At: f.tick(), DurationSeconds: 3}); err != nil {
		t.Fatal(err)
	}
	got, _ = f.s.Call(f.ctx, a.ID, placed.ID)
	if got.EndReason != core.EndHangUpAPI || got.Status != core.CallDone {
		t.Fatalf("hung up: %+v", got)
	}
	if n, err := f.s.ActiveCalls(f.ctx, a.ID); err != nil || n != 1 {
		t.Fatalf("active calls after one ended: %d, %v", n, err)
	}
	want := []string{"call.received", "call.received", "call.started", "call.completed"}
	evs := f.events(core.Scope{AccountID: a.ID}, 0, "call.*")
	if got := eventTypes(evs); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}

	// A call whose bridge has ended: its report writes call.completed,
	// with the bridge's counts.
	after := evs[len(evs)-1].Seq
	if _, err := f.s.ReportCall(f.ctx, core.CallReport{ProviderSID: c.ProviderSID, Status: core.CallDone, At: f.tick(), DurationSeconds: 3}); err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, f.events(core.Scope{AccountID: a.ID}, after, "call.*"), c.ID, st.FramesFromCaller)

	// A call reported ended while its bridge runs: call.completed waits
	// for the bridge's counts; its stream cannot be opened again.
	in = callTo(pa, "+14155550102", "CA"+uuid.NewString()[:8], f.tick())
	in.Mode, in.AgentURL, in.Status = core.VoiceStream, "wss://agent.example/", core.CallInProgress
	c, _, err = f.s.SaveCall(f.ctx, in)
	f.must(err)
	connected = f.tick()
	f.must(f.s.StreamConnected(f.ctx, c.ID, connected))
	evs = f.events(core.Scope{AccountID: a.ID}, after, "call.*")
	after = evs[len(evs)-1].Seq // its call.started
	if _, err := f.s.ReportCall(f.ctx, core.CallReport{ProviderSID: c.ProviderSID, Status: core.CallDone, At: f.tick(), DurationSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	if evs := f.events(core.Scope{AccountID: a.ID}, after, "call.*"); len(evs) != 0 {
		t.Fatalf("events while the bridge runs: %v", eventTypes(evs))
	}
	wantKind(t, f.s.StreamConnected(f.ctx, c.ID, f.tick()), core.KindNotFound)
	st = core.CallStream{ConnectedAt: connected, EndedAt: f.tick(), FramesFromCaller: 7, FramesToCaller: 6}
	f.must(f.s.StreamEnded(f.ctx, c.ID, st, core.EndCompleted, nil))
	wantCompleted(t, f.events(core.Scope{AccountID: a.ID}, after, "call.*"), c.ID, st.FramesFromCaller)
	if got, _ := f.s.Call(f.ctx, a.ID, c.ID); got.Stream == nil || *got.Stream != st || got.Status != core.CallDone {
		t.Fatalf("after the bridge: %+v %+v", got, got.Stream)
	}

	// A bridge that never reports (its instance stopped): once the call
	// has been over long enough, EndStaleStreams ends it and writes the
	// held call.completed, with the counts known.
	in = callTo(pa, "+14155550103", "CA"+uuid.NewString()[:8], f.tick())
	in.Mode, in.AgentURL, in.Status = core.VoiceStream, "wss://agent.example/", core.CallInProgress
	c, _, err = f.s.SaveCall(f.ctx, in)
	f.must(err)
	f.must(f.s.StreamConnected(f.ctx, c.ID, f.tick()))
	evs = f.events(core.Scope{AccountID: a.ID}, after, "call.*")
	after = evs[len(evs)-1].Seq
	ended := f.tick()
	if _, err := f.s.ReportCall(f.ctx, core.CallReport{ProviderSID: c.ProviderSID, Status: core.CallDone, At: ended, DurationSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	if n, err := f.s.EndStaleStreams(f.ctx, ended); err != nil || n != 0 {
		t.Fatalf("stale streams ended before the call did: %d, %v", n, err)
	}
	if n, err := f.s.EndStaleStreams(f.ctx, ended.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("stale streams: %d, %v", n, err)
	}
	wantCompleted(t, f.events(core.Scope{AccountID: a.ID}, after, "call.*"), c.ID, 0)
	if n, err := f.s.EndStaleStreams(f.ctx, ended.Add(time.Second)); err != nil || n != 0 {
		t.Fatalf("stale streams, again: %d, %v", n, err)
	}
	if got, _ := f.s.Call(f.ctx, a.ID, c.ID); got.Stream == nil || !got.Stream.EndedAt.Equal(ended) {
		t.Fatalf("a stale stream: %+v", got.Stream)
	}
}

// wantCompleted checks evs is one call.completed of call id, with the
// bridge's count of frames from the caller.
func wantCompleted(t *testing.T, evs []core.Event, id, fromCaller int64) {
	t.Helper()
	var data struct {
		ID     int64
		Stream *struct{ FramesFromCaller int64 }
	}
	if len(evs) != 1 || evs[0].Type != core.CallCompleted || json.Unmarshal(evs[0].Data, &data) != nil || data.ID != id ||
		data.Stream == nil || data.Stream.FramesFromCaller != fromCaller {
		t.Fatalf("want call %d's call.completed with %d frames from the caller: %v %s", id, fromCaller, eventTypes(evs), evs[0].Data)
	}
}
