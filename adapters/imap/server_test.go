package imap_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	imapadapter "github.com/callsign/callsign/adapters/imap"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// serve starts the IMAP server on loopback and returns its address.
func (w *world) serve(opts imapadapter.ServerOptions) string {
	w.t.Helper()
	srv := imapadapter.NewServer(w.app.Mailboxes, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	go srv.Serve(ln)
	w.t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) *imapclient.Client {
	t.Helper()
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// login dials and logs in as an agent.
func login(t *testing.T, addr string, a agent) *imapclient.Client {
	t.Helper()
	c := dial(t, addr)
	if err := c.Login(a.inbox.Email, a.key).Wait(); err != nil {
		t.Fatalf("login: %v", err)
	}
	return c
}

// wantNo fails unless err is a NO whose text contains text.
func wantNo(t *testing.T, err error, code imap.ResponseCode, text string) {
	t.Helper()
	var ie *imap.Error
	if !errors.As(err, &ie) || ie.Type != imap.StatusResponseTypeNo || ie.Code != code || !strings.Contains(ie.Text, text) {
		t.Fatalf("want NO [%s] …%s…, got %v", code, text, err)
	}
}

func TestLoginNeedsTheInboxsOwnIdentityKey(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.agent("alice"), w.agent("bob")
	addr := w.serve(imapadapter.ServerOptions{PlaintextAuth: true, LoginFailures: 4})
	login(t, addr, alice)
	for _, tc := range []struct{ name, user, pass string }{
		{"another identity's key", alice.inbox.Email, bob.key},
		{"a management key", alice.inbox.Email, w.mgmt},
		{"a wrong key", alice.inbox.Email, "svc_id_" + strings.Repeat("x", 40)},
	} {
		err := dial(t, addr).Login(tc.user, tc.pass).Wait()
		wantNo(t, err, imap.ResponseCodeAuthenticationFailed, "")
	}
	// The fourth failure for this inbox from this address uses up its
	// allowance: even the right key waits (the address compared ignoring case).
	wantNo(t, dial(t, addr).Login(strings.ToUpper(alice.inbox.Email), "svc_id_"+strings.Repeat("y", 40)).Wait(), imap.ResponseCodeAuthenticationFailed, "")
	wantNo(t, dial(t, addr).Login(alice.inbox.Email, alice.key).Wait(), imap.ResponseCodeUnavailable, "Too many failed logins")
	// Those failures do not hold back another inbox's key from the same
	// address (a stranger behind the same NAT)...
	login(t, addr, bob)
	// ...until the address has failed ten times the allowance, across inboxes.
	for i := range 10*4 - 4 {
		wantNo(t, dial(t, addr).Login(fmt.Sprintf("nobody%d@agents.test", i), bob.key).Wait(), imap.ResponseCodeAuthenticationFailed, "")
	}
	wantNo(t, dial(t, addr).Login(bob.inbox.Email, bob.key).Wait(), imap.ResponseCodeUnavailable, "Too many failed logins")
}

func TestListSelectFetchAndSearch(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice")
	plain := w.deliver(alice.inbox, fixture(t, "plain.eml"))
	nested := w.deliver(alice.inbox, fixture(t, "nested.eml"))
	content := "Thanks!"
	sent, err := w.app.Sending.Reply(w.ctx, alice.p, plain.ID, app.SendInput{Content: &content}, false)
	if err != nil {
		t.Fatal(err)
	}
	c := login(t, w.serve(imapadapter.ServerOptions{PlaintextAuth: true}), alice)

	boxes, err := c.List("", "*", nil).Collect()
	if err != nil || len(boxes) != 3 || boxes[0].Mailbox != "INBOX" || boxes[1].Mailbox != "Sent" ||
		!hasAttr(boxes[1].Attrs, imap.MailboxAttrSent) || boxes[2].Mailbox != "Junk" || !hasAttr(boxes[2].Attrs, imap.MailboxAttrJunk) {
		t.Fatalf("LIST: %v %+v", err, boxes)
	}
	st, err := c.Status("Sent", &imap.StatusOptions{NumMessages: true, NumUnseen: true}).Wait()
	if err != nil || *st.NumMessages != 1 || *st.NumUnseen != 0 {
		t.Fatalf("STATUS Sent: %v %+v", err, st)
	}
	sel, err := c.Select("inbox", nil).Wait()
	if err != nil || sel.NumMessages != 2 || sel.UIDValidity != uint32(alice.inbox.CreatedAt.Unix()) ||
		sel.UIDNext != imap.UID(nested.ID+1) {
		t.Fatalf("SELECT: %v %+v", err, sel)
	}

	body := &imap.FetchItemBodySection{Peek: true}
	attachment := &imap.FetchItemBodySection{Part: []int{2}, Peek: true}
	msgs, err := c.Fetch(imap.SeqSetNum(1, 2), &imap.FetchOptions{UID: true, Flags: true, Envelope: true, RFC822Size: true,
		BodyStructure: &imap.FetchItemBodyStructure{}, BodySection: []*imap.FetchItemBodySection{body, attachment}}).Collect()
	if err != nil || len(msgs) != 2 {
		t.Fatalf("FETCH: %v %d", err, len(msgs))
	}
	first, second := msgs[0], msgs[1]
	raw := fixture(t, "plain.eml")
	if first.UID != imap.UID(plain.ID) || first.Envelope.Subject != plain.Subject || string(first.FindBodySection(body)) != raw ||
		first.RFC822Size != int64(len(raw)) || len(first.Flags) != 0 {
		t.Fatalf("first message: uid %d, %+v, size %d, flags %v", first.UID, first.Envelope, first.RFC822Size, first.Flags)
	}
	mp, ok := second.BodyStructure.(*imap.BodyStructureMultiPart)
	if !ok || mp.Subtype != "mixed" || len(mp.Children) != 2 || second.Envelope.MessageID != nested.MessageID {
		t.Fatalf("second message's structure %#v, envelope %+v", second.BodyStructure, second.Envelope)
	}
	if part := string(second.FindBodySection(attachment)); !strings.Contains(part, "%PDF") && len(part) == 0 {
		t.Fatalf("the attachment part is empty")
	}

	for _, tc := range []struct {
		name     string
		criteria imap.SearchCriteria
		want     []uint32
	}{
		{"all", imap.SearchCriteria{}, []uint32{1, 2}},
		{"subject", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Subject", Value: "invoice"}}}, []uint32{2}},
		{"from", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "From", Value: "grace"}}}, []uint32{2}},
		{"body", imap.SearchCriteria{Body: []string{"INVOICE ATTACHED"}}, []uint32{2}},
		{"text in a header", imap.SearchCriteria{Text: []string{"navy.example"}}, []uint32{2}},
		{"unseen", imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}, []uint32{1, 2}},
		{"larger", imap.SearchCriteria{Larger: int64(len(raw))}, []uint32{2}},
		{"not", imap.SearchCriteria{Not: []imap.SearchCriteria{{Body: []string{"invoice"}}}}, []uint32{1}},
		{"or", imap.SearchCriteria{Or: [][2]imap.SearchCriteria{{{Body: []string{"nothing like it"}}, {SeqNum: []imap.SeqSet{imap.SeqSetNum(1)}}}}}, []uint32{1}},
		{"sent before", imap.SearchCriteria{SentBefore: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}, nil},
	} {
		res, err := c.Search(&tc.criteria, nil).Wait()
		if err != nil {
			t.Fatalf("SEARCH %s: %v", tc.name, err)
		}
		if got := res.AllSeqNums(); !equalNums(got, tc.want) {
			t.Errorf("SEARCH %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	uidRes, err := c.UIDSearch(&imap.SearchCriteria{UID: []imap.UIDSet{uidRange(imap.UID(nested.ID), 0)}}, nil).Wait()
	if got := uidRes.AllUIDs(); err != nil || len(got) != 1 || got[0] != imap.UID(nested.ID) {
		t.Fatalf("UID SEARCH n:*: %v %v", err, got)
	}

	if _, err := c.Select("Sent", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	out, err := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{UID: true, Flags: true, Envelope: true}).Collect()
	if err != nil || len(out) != 1 || out[0].UID != imap.UID(sent.ID) || out[0].Envelope.Subject != "Re: "+plain.Subject ||
		!hasFlag(out[0].Flags, imap.FlagSeen) {
		t.Fatalf("Sent: %v %+v", err, out)
	}
	_, err = c.Select("Archive", nil).Wait()
	wantNo(t, err, imap.ResponseCodeNonExistent, "INBOX, Sent, Junk")
}

func TestSeenIsIsReadBothWays(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice")
	first := w.deliver(alice.inbox, fixture(t, "plain.eml"))
	second := w.deliver(alice.inbox, fixture(t, "alternative.eml"))
	addr := w.serve(imapadapter.ServerOptions{PlaintextAuth: true})
	c := login(t, addr, alice)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	stored, err := c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagSeen, imap.FlagFlagged}}, nil).Collect()
	if err != nil || len(stored) != 1 || !hasFlag(stored[0].Flags, imap.FlagSeen) || hasFlag(stored[0].Flags, imap.FlagFlagged) {
		t.Fatalf("STORE: %v %+v", err, stored)
	}
	if m, _ := w.app.Reading.Message(w.ctx, alice.p, first.ID); !m.IsRead {
		t.Fatal("\\Seen over IMAP did not mark the message read")
	}
	// Reading a body without PEEK marks it read too.
	if _, err := c.Fetch(imap.SeqSetNum(2), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{{}}}).Collect(); err != nil {
		t.Fatal(err)
	}
	if m, _ := w.app.Reading.Message(w.ctx, alice.p, second.ID); !m.IsRead {
		t.Fatal("FETCH BODY[] did not mark the message read")
	}
	// The API marks it unread: the client hears of it at its next command.
	if _, err := w.app.Reading.SetRead(w.ctx, alice.p, first.ID, false); err != nil {
		t.Fatal(err)
	}
	flags := make(chan *imapclient.FetchMessageBuffer, 4)
	c2 := loginWithHandler(t, addr, alice, flags)
	if _, err := c2.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Reading.SetRead(w.ctx, alice.p, second.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := c2.Noop().Wait(); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-flags:
		if f.SeqNum != 2 || hasFlag(f.Flags, imap.FlagSeen) {
			t.Fatalf("after the API marked message 2 unread: FETCH %d %v", f.SeqNum, f.Flags)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no FETCH FLAGS after the API changed is_read")
	}
}

// loginWithHandler logs in on a connection whose unsolicited FETCH FLAGS
// go to flags.
func loginWithHandler(t *testing.T, addr string, a agent, flags chan *imapclient.FetchMessageBuffer) *imapclient.Client {
	t.Helper()
	c, err := imapclient.DialInsecure(addr, &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Fetch: func(m *imapclient.FetchMessageData) {
			if buf, err := m.Collect(); err == nil {
				flags <- buf
			}
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(a.inbox.Email, a.key).Wait(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIdleAnnouncesNewMail(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice")
	w.deliver(alice.inbox, fixture(t, "plain.eml"))
	exists := make(chan uint32, 8)
	// No recheck during the test: only the signals may bring news.
	addr := w.serve(imapadapter.ServerOptions{PlaintextAuth: true, Recheck: time.Hour})
	c := selectInbox(t, addr, alice, &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				exists <- *d.NumMessages
			}
		},
	})
	idle, err := c.Idle()
	if err != nil {
		t.Fatal(err)
	}
	want := func(n uint32, why string) {
		t.Helper()
		if got := receive(t, exists, why+": EXISTS during IDLE"); got != n {
			t.Fatalf("%s: EXISTS %d, want %d", why, got, n)
		}
	}
	w.deliver(alice.inbox, fixture(t, "alternative.eml"))
	want(2, "delivered through the app")
	// Stored behind the app's back, as another instance would: the event
	// log's signal (NOTIFY on PostgreSQL) brings it.
	parsed := w.deliver(w.agent("bob").inbox, fixture(t, "reply.eml"))
	parsed.InboxID, parsed.IdentityID = alice.inbox.ID, alice.inbox.IdentityID
	if _, err := w.store.SaveMail(w.ctx, []ports.NewMail{{Message: parsed, NewThreadID: "other-instance", Raw: []byte("Subject: x\r\n\r\ny\r\n")}}); err != nil {
		t.Fatal(err)
	}
	want(3, "stored by another instance")
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}
	if err := idle.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestWhatIsRefusedIsRefusedClearly(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice")
	w.deliver(alice.inbox, fixture(t, "plain.eml"))
	c := login(t, w.serve(imapadapter.ServerOptions{PlaintextAuth: true}), alice)
	wantNo(t, c.Create("Archive", nil).Wait(), imap.ResponseCodeCannot, "folders are fixed")
	wantNo(t, c.Delete("Sent").Wait(), imap.ResponseCodeCannot, "folders are fixed")
	raw := "Subject: x\r\n\r\ny\r\n"
	appendCmd := c.Append("Sent", int64(len(raw)), nil)
	appendCmd.Write([]byte(raw))
	appendCmd.Close()
	_, err := appendCmd.Wait()
	wantNo(t, err, imap.ResponseCodeCannot, "APPEND is not supported")
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Copy(imap.SeqSetNum(1), "Sent").Wait()
	wantNo(t, err, imap.ResponseCodeCannot, "COPY and MOVE")
	if err := c.Expunge().Close(); err != nil {
		t.Fatalf("EXPUNGE with nothing marked: %v", err)
	}
	if err := c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	wantNo(t, c.Expunge().Close(), imap.ResponseCodeCannot, "Deleting over IMAP is not supported")
	if n := len(w.messages(alice.inbox)); n != 1 {
		t.Fatalf("%d messages after EXPUNGE", n)
	}
	if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatal(err)
	}
	err = c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagSeen}}, nil).Close()
	wantNo(t, err, imap.ResponseCodeCannot, "read-only")
}

func TestPlaintextLoginOnlyWhereAllowed(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice")
	cert := selfSigned(t)
	srv := imapadapter.NewServer(w.app.Mailboxes, imapadapter.ServerOptions{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	plainLn, _ := net.Listen("tcp", "127.0.0.1:0")
	tlsLn, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(plainLn)
	go srv.ServeTLS(tlsLn)
	t.Cleanup(func() { srv.Close() })

	c := dial(t, plainLn.Addr().String())
	if caps := c.Caps(); !caps.Has(imap.CapLoginDisabled) || !caps.Has(imap.CapStartTLS) {
		t.Fatalf("plaintext capabilities without PlaintextAuth: %v", caps)
	}
	wantNo(t, c.Login(alice.inbox.Email, alice.key).Wait(), imap.ResponseCodePrivacyRequired, "")

	trust := &tls.Config{InsecureSkipVerify: true} // the certificate is made up for this test
	st, err := imapclient.DialStartTLS(plainLn.Addr().String(), &imapclient.Options{TLSConfig: trust})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Login(alice.inbox.Email, alice.key).Wait(); err != nil {
		t.Fatalf("login after STARTTLS: %v", err)
	}
	it, err := imapclient.DialTLS(tlsLn.Addr().String(), &imapclient.Options{TLSConfig: trust})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if err := it.Login(alice.inbox.Email, alice.key).Wait(); err != nil {
		t.Fatalf("login over implicit TLS: %v", err)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func hasAttr(attrs []imap.MailboxAttr, a imap.MailboxAttr) bool {
	for _, x := range attrs {
		if x == a {
			return true
		}
	}
	return false
}

func hasFlag(flags []imap.Flag, f imap.Flag) bool {
	for _, x := range flags {
		if strings.EqualFold(string(x), string(f)) {
			return true
		}
	}
	return false
}

func equalNums(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func uidRange(start, stop imap.UID) imap.UIDSet {
	var s imap.UIDSet
	s.AddRange(start, stop)
	return s
}

func TestCloseBeforeServeStillStopsServe(t *testing.T) {
	w := newWorld(t)
	srv := imapadapter.NewServer(w.app.Mailboxes, imapadapter.ServerOptions{})
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ln); err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener still accepts after Close")
	}
}

// TestDeletedMailIsExpunged: a message deleted through the API leaves the
// folder of every connected client: during IDLE at once, otherwise at the
// next command that may renumber (never during FETCH, STORE or SEARCH,
// where a FETCH of it just says nothing).
func TestDeletedMailIsExpunged(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice")
	var ids []int64
	for _, name := range []string{"plain.eml", "alternative.eml", "reply.eml"} {
		ids = append(ids, w.deliver(alice.inbox, fixture(t, name)).ID)
	}
	addr := w.serve(imapadapter.ServerOptions{PlaintextAuth: true, Recheck: time.Hour})
	expunged := make(chan uint32, 8)
	c := selectInbox(t, addr, alice, &imapclient.UnilateralDataHandler{Expunge: func(seq uint32) { expunged <- seq }})
	wantExpunge := func(seq uint32, why string) {
		t.Helper()
		if got := receive(t, expunged, why+": EXPUNGE"); got != seq {
			t.Fatalf("%s: EXPUNGE %d, want %d", why, got, seq)
		}
	}
	// During IDLE, at once (the recheck is an hour away).
	idle, err := c.Idle()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.app.Reading.DeleteMessage(w.ctx, alice.p, ids[1]); err != nil {
		t.Fatal(err)
	}
	wantExpunge(2, "deleted during IDLE")
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}
	if err := idle.Wait(); err != nil {
		t.Fatal(err)
	}
	// Outside IDLE: a FETCH of the deleted message says nothing and renumbers
	// nothing; the next NOOP expunges it.
	if err := w.app.Reading.DeleteMessage(w.ctx, alice.p, ids[0]); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Fetch(imap.SeqSetNum(1, 2), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}}}).Collect()
	if err != nil || len(msgs) != 1 || msgs[0].UID != imap.UID(ids[2]) {
		t.Fatalf("FETCH 1:2 after a delete: %v %+v", err, msgs)
	}
	select {
	case seq := <-expunged:
		t.Fatalf("EXPUNGE %d during FETCH", seq)
	default:
	}
	if err := c.Noop().Wait(); err != nil {
		t.Fatal(err)
	}
	wantExpunge(1, "deleted before NOOP")
	sel, err := c.Select("INBOX", nil).Wait()
	if err != nil || sel.NumMessages != 1 {
		t.Fatalf("SELECT after the deletes: %v %+v", err, sel)
	}
	uids, err := c.UIDSearch(&imap.SearchCriteria{}, nil).Wait()
	if err != nil || len(uids.AllUIDs()) != 1 || uids.AllUIDs()[0] != imap.UID(ids[2]) {
		t.Fatalf("UID SEARCH ALL: %v %+v", err, uids)
	}
}

// selectInbox logs in as a and selects INBOX on a connection whose
// unsolicited responses go to handler.
func selectInbox(t *testing.T, addr string, a agent, handler *imapclient.UnilateralDataHandler) *imapclient.Client {
	t.Helper()
	c, err := imapclient.DialInsecure(addr, &imapclient.Options{UnilateralDataHandler: handler})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(a.inbox.Email, a.key).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	return c
}

// receive waits for what an unsolicited response sent to ch.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	var v T
	select {
	case v = <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s", what)
	}
	return v
}

// TestKeywordsAreLabelsBothWays: STORE of keywords adds, removes and sets
// labels (folded to lower case), a keyword that is no label is refused
// before anything changes, and labels set through the API show in FETCH
// FLAGS, at once to a client that asks and as news to one that waits.
func TestKeywordsAreLabelsBothWays(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice")
	first := w.deliver(alice.inbox, fixture(t, "plain.eml"))
	second := w.deliver(alice.inbox, fixture(t, "alternative.eml"))
	if _, err := w.app.Reading.Label(w.ctx, alice.p, second.ID, "waiting", true); err != nil {
		t.Fatal(err)
	}
	addr := w.serve(imapadapter.ServerOptions{PlaintextAuth: true})
	c := login(t, addr, alice)
	sel, err := c.Select("INBOX", nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !hasFlag(sel.PermanentFlags, imap.FlagWildcard) || !hasFlag(sel.PermanentFlags, imap.FlagSeen) || !hasFlag(sel.Flags, "waiting") {
		t.Fatalf("SELECT: FLAGS %v, PERMANENTFLAGS %v", sel.Flags, sel.PermanentFlags)
	}
	labels := func(id int64) string {
		t.Helper()
		m, err := w.app.Reading.Message(w.ctx, alice.p, id)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(m.Labels, " ")
	}
	store := func(op imap.StoreFlagsOp, flags ...imap.Flag) ([]*imapclient.FetchMessageBuffer, error) {
		return c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: op, Flags: flags}, nil).Collect()
	}
	stored, err := store(imap.StoreFlagsAdd, "Todo", "$Forwarded", imap.FlagSeen)
	if err != nil || len(stored) != 1 || !hasFlag(stored[0].Flags, "todo") || !hasFlag(stored[0].Flags, "$forwarded") {
		t.Fatalf("STORE +FLAGS: %v %+v", err, stored)
	}
	if got := labels(first.ID); got != "$forwarded todo" {
		t.Fatalf("labels after STORE +FLAGS: %q", got)
	}
	if _, err := store(imap.StoreFlagsDel, "$forwarded"); err != nil || labels(first.ID) != "todo" {
		t.Fatalf("STORE -FLAGS: %v, labels %q", err, labels(first.ID))
	}
	if _, err := store(imap.StoreFlagsSet, imap.FlagSeen, "a", "b"); err != nil || labels(first.ID) != "a b" {
		t.Fatalf("STORE FLAGS: %v, labels %q", err, labels(first.ID))
	}
	_, err = store(imap.StoreFlagsAdd, "ok", "no/slash")
	wantNo(t, err, imap.ResponseCodeCannot, "is not a label")
	if got := labels(first.ID); got != "a b" {
		t.Fatalf("a refused STORE changed the labels: %q", got)
	}
	for i := 0; i < core.MaxLabels-2; i++ {
		if _, err := store(imap.StoreFlagsAdd, imap.Flag(fmt.Sprintf("l%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	_, err = store(imap.StoreFlagsAdd, "one-more")
	wantNo(t, err, imap.ResponseCodeLimit, "at most 20 labels")

	// The API's labels show in FETCH FLAGS; a waiting client hears of a change.
	fetched, err := c.Fetch(imap.SeqSetNum(2), &imap.FetchOptions{Flags: true}).Collect()
	if err != nil || len(fetched) != 1 || !hasFlag(fetched[0].Flags, "waiting") {
		t.Fatalf("FETCH FLAGS: %v %+v", err, fetched)
	}
	news := make(chan *imapclient.FetchMessageBuffer, 4)
	c2 := loginWithHandler(t, addr, alice, news)
	if _, err := c2.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Reading.Label(w.ctx, alice.p, second.ID, "done", true); err != nil {
		t.Fatal(err)
	}
	if err := c2.Noop().Wait(); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-news:
		if f.SeqNum != 2 || !hasFlag(f.Flags, "done") || !hasFlag(f.Flags, "waiting") {
			t.Fatalf("after the API labelled message 2: FETCH %d %v", f.SeqNum, f.Flags)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no FETCH FLAGS after the API changed the labels")
	}
}
