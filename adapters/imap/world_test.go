package imap_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/egress"
	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// world is the app over the memory fakes, with one account and identities
// made on demand.
type world struct {
	t     *testing.T
	ctx   context.Context
	store *memory.Store
	app   *app.App
	owner core.Principal
	mgmt  string // the owner's management key
	// destinations is the outbound-destination policy the app holds sources to.
	destinations *destinations
}

// destinations checks hosts at PUT with one dialer and connects with
// another, so a test can change what a host resolves to in between.
type destinations struct {
	mu          sync.Mutex
	check, dial *egress.Dialer
}

func (d *destinations) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	c := d.check
	d.mu.Unlock()
	return c.Resolve(ctx, host)
}

func (d *destinations) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	c := d.dial
	d.mu.Unlock()
	return c.DialContext(ctx, network, address)
}

func (d *destinations) dialWith(dial *egress.Dialer) {
	d.mu.Lock()
	d.dial = dial
	d.mu.Unlock()
}

// newWorld builds the app over a memory store, with quotas when given.
func newWorld(t *testing.T, quotas ...core.Limits) *world {
	t.Helper()
	// The tests' servers are on loopback: the policy allows them, unless a
	// test changes what a dial may reach.
	w := &world{t: t, ctx: context.Background(), store: memory.NewStore(), destinations: &destinations{
		check: egress.New(core.DestinationPolicy{AllowPrivate: true}, nil), dial: egress.New(core.DestinationPolicy{AllowPrivate: true}, nil)}}
	clock := memory.NewClock(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))
	clock.Step = time.Millisecond
	deps := app.Deps{
		Ports: app.Ports{Store: w.store, Clock: clock, IDs: memory.IDs{}, Cipher: &memory.Cipher{},
			Parser: mailmime.Parser{}, Composer: mailmime.Composer{}, Destinations: w.destinations},
		Settings: app.Settings{MailDomains: []string{"agents.test"}, MaxMessageBytes: 1 << 20}}
	for _, q := range quotas {
		deps.Quotas = q
	}
	w.app = app.New(deps)
	t.Cleanup(w.app.Close)
	b, err := w.app.Accounts.Create(w.ctx, "owner@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	w.mgmt = b.ManagementKey
	if w.owner, err = w.app.Auth.Authenticate(w.ctx, b.ManagementKey); err != nil {
		t.Fatal(err)
	}
	return w
}

// agent is an identity with its inbox and an identity key.
type agent struct {
	inbox core.Inbox
	key   string
	p     core.Principal
}

func (w *world) agent(name string) agent {
	w.t.Helper()
	ident, err := w.app.Identities.Create(w.ctx, w.owner, app.IdentityInput{Name: &name, EmailIdentifier: &name})
	if err != nil {
		w.t.Fatal(err)
	}
	in, err := w.store.InboxByEmail(w.ctx, ident.Inbox)
	if err != nil {
		w.t.Fatal(err)
	}
	k, err := w.app.Auth.CreateIdentityKey(w.ctx, w.owner, app.KeyInput{Identity: ident.ID})
	if err != nil {
		w.t.Fatal(err)
	}
	p, err := w.app.Auth.Authenticate(w.ctx, k.Secret)
	if err != nil {
		w.t.Fatal(err)
	}
	return agent{inbox: in, key: k.Secret, p: p}
}

// deliver stores raw in an inbox as SMTP would.
func (w *world) deliver(in core.Inbox, raw string) core.EmailMessage {
	w.t.Helper()
	msgs, err := w.app.Receiving.Deliver(w.ctx, app.InboundMail{EnvelopeFrom: "sender@example.org", Inboxes: []core.Inbox{in}, Raw: []byte(raw)})
	if err != nil {
		w.t.Fatal(err)
	}
	return msgs[0]
}

// messages lists an inbox's messages, oldest first.
func (w *world) messages(in core.Inbox) []core.EmailMessage {
	w.t.Helper()
	msgs, _, err := w.store.Messages(w.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: in.AccountID}, InboxID: in.ID})
	if err != nil {
		w.t.Fatal(err)
	}
	// A list carries summaries; read each message with its bodies.
	for i, m := range msgs {
		if msgs[i], err = w.store.Message(w.ctx, in.AccountID, m.ID); err != nil {
			w.t.Fatal(err)
		}
	}
	return msgs
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "mail", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eventually waits until f is true.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
