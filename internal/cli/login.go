package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// login runs `callsign login --server URL`, the client side of device-code
// login (spec §5.6, RFC 8628): it asks the server for a code, tells the
// person where to approve it, polls as the server asks, and keeps the keys
// it receives in the user's config directory.
func (c *cli) loginCommand() *cobra.Command {
	var server, name string
	var ask loginAsk
	login := leaf(&cobra.Command{
		Use:   "login --server URL [flags]",
		Short: "Connect this machine to an account in a browser (device-code login)",
		Long: `Connect this machine to an account: the command prints a one-time code and a
page to approve it on (a phone works), then saves the one key the person
grants in callsign/credentials.json in your config directory (mode 0600):
an identity key for one identity (the default), or a management key for the
whole account when the person chooses it. --identity and --management only
preselect the choice on the page.`,
		RunE: func(*cobra.Command, []string) error { return c.login(server, name, ask) },
	})
	login.Flags().StringVar(&server, "server", "", "the Callsign server's address, such as https://callsign.example.com")
	login.Flags().StringVar(&name, "name", "", `how the approval page names this client (default "callsign CLI on <host>")`)
	login.Flags().StringVar(&ask.identity, "identity", "", "ask for a key for this identity (name or uuid; a new identity of that name if none has it)")
	login.Flags().BoolVar(&ask.management, "management", false, "ask for a management key for the whole account instead of an identity key")
	login.MarkFlagsMutuallyExclusive("identity", "management")
	_ = login.MarkFlagRequired("server")
	return login
}

// loginAsk is what login asks the page to preselect.
type loginAsk struct {
	identity   string
	management bool
}

func (c *cli) login(server, name string, ask loginAsk) error {
	base, err := serverURL(server)
	if err != nil {
		return usageError{"--server: " + err.Error()}
	}
	if name == "" {
		host, _ := os.Hostname()
		name = strings.TrimSpace("callsign CLI on " + host)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dc := &deviceClient{base: base, http: &http.Client{Timeout: 30 * time.Second}, wait: sleep}

	start, err := dc.start(ctx, name, ask)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Your one-time code: %s\nOpen this page to approve the login:\n  %s\n(or open %s and type the code)\nWaiting for approval…\n",
		start.UserCode, start.VerificationURIComplete, start.VerificationURI)
	keys, err := dc.poll(ctx, start)
	if err != nil {
		return err
	}
	path, err := saveCredentials(base, keys)
	if err != nil {
		return err
	}
	if err := dc.check(ctx, keys.key()); err != nil {
		return fmt.Errorf("the server gave a key that does not work: %w", err)
	}
	if keys.ManagementKey != "" {
		fmt.Fprintf(c.stdout, "Logged in to %s with a management key for the whole account.\nKey saved to %s\n", base, path)
	} else {
		fmt.Fprintf(c.stdout, "Logged in to %s as identity %q (%s).\nKey saved to %s\n", base, keys.Identity.Name, keys.Identity.Inbox, path)
	}
	return nil
}

// serverURL reads --server: an http(s) URL without query, slash-free at the end.
func serverURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(s), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an http(s) address such as https://callsign.example.com", s)
	}
	return u.String(), nil
}

// DeviceGrantType is RFC 8628's grant_type for polling.
const DeviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

// DeviceStart is the server's answer to a new request (RFC 8628 §3.2).
type DeviceStart struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// DeviceKeys is what a successful poll hands over: the one key the person
// granted, a management key or an identity key with its identity.
type DeviceKeys struct {
	ManagementKey string `json:"management_key,omitempty"`
	IdentityKey   string `json:"identity_key,omitempty"`
	Identity      struct {
		UUID  string `json:"uuid"`
		Name  string `json:"name"`
		Inbox string `json:"inbox"`
	} `json:"identity,omitzero"`
}

// key is the key granted.
func (k DeviceKeys) key() string {
	if k.ManagementKey != "" {
		return k.ManagementKey
	}
	return k.IdentityKey
}

// deviceClient talks to one server; wait is how it sleeps (tests record it).
type deviceClient struct {
	base string
	http *http.Client
	wait func(ctx context.Context, d time.Duration) error
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// post sends a form (RFC 8628 clients send forms) and decodes the JSON
// answer into out; a body that is not JSON is an error.
func (dc *deviceClient) post(ctx context.Context, path string, form url.Values, out any) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", dc.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := dc.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err == nil && json.Unmarshal(body, out) != nil {
		err = fmt.Errorf("%s answered %s, not JSON", path, res.Status)
	}
	return res, err
}

func (dc *deviceClient) start(ctx context.Context, clientName string, ask loginAsk) (DeviceStart, error) {
	var answer struct {
		DeviceStart
		Detail string `json:"detail"`
	}
	form := url.Values{"client_name": {clientName}}
	switch {
	case ask.management:
		form.Set("key_type", "management")
	case ask.identity != "":
		form.Set("identity", ask.identity)
	}
	res, err := dc.post(ctx, "/api/auth/device/", form, &answer)
	switch {
	case err != nil:
		return DeviceStart{}, fmt.Errorf("asking %s for a code: %w", dc.base, err)
	case res.StatusCode != http.StatusOK || answer.DeviceCode == "":
		return DeviceStart{}, fmt.Errorf("asking %s for a code: %s %s", dc.base, res.Status, answer.Detail)
	}
	return answer.DeviceStart, nil
}

// pollBackoffLimit bounds the wait after a failure to reach the server.
const pollBackoffLimit = time.Minute

// poll asks for the keys every interval until the person answers or the
// code expires. It slows down when told to (slow_down adds 5 seconds, for
// good), waits out a 429's Retry-After, and rides out a server that is
// briefly unreachable.
func (dc *deviceClient) poll(ctx context.Context, st DeviceStart) (DeviceKeys, error) {
	interval := time.Duration(st.Interval) * time.Second
	if interval <= 0 {
		interval = 5 * time.Second // RFC 8628 §3.2's default
	}
	deadline := time.Now().Add(time.Duration(st.ExpiresIn) * time.Second)
	form := url.Values{"grant_type": {DeviceGrantType}, "device_code": {st.DeviceCode}}
	wait := interval
	for {
		if err := dc.wait(ctx, wait); err != nil {
			return DeviceKeys{}, err
		}
		if st.ExpiresIn > 0 && time.Now().After(deadline) {
			return DeviceKeys{}, errors.New("the code expired before it was approved; run callsign login again")
		}
		wait = interval
		var answer struct {
			DeviceKeys
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		res, err := dc.post(ctx, "/api/auth/device/token/", form, &answer)
		switch {
		case ctx.Err() != nil:
			return DeviceKeys{}, ctx.Err()
		case err != nil || res.StatusCode >= 500:
			wait = min(2*interval, pollBackoffLimit) // the server is having trouble; give it room
		case res.StatusCode == http.StatusOK:
			return answer.DeviceKeys, nil
		case res.StatusCode == http.StatusTooManyRequests:
			if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && time.Duration(s)*time.Second > wait {
				wait = time.Duration(s) * time.Second
			}
		case answer.Error == "authorization_pending":
		case answer.Error == "slow_down":
			interval += 5 * time.Second
			wait = interval
		case answer.Error == "access_denied":
			return DeviceKeys{}, errors.New("the login was denied in the browser")
		case answer.Error == "expired_token":
			return DeviceKeys{}, errors.New("the code expired before it was approved; run callsign login again")
		default:
			return DeviceKeys{}, fmt.Errorf("the server refused: %s %s", answer.Error, answer.Description)
		}
	}
}

// check asks the server who a key is, to prove the key works.
func (dc *deviceClient) check(ctx context.Context, key string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", dc.base+"/api/health/whoami/", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := dc.http.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("whoami answered %s", res.Status)
	}
	return nil
}

// Credentials is the file login keeps keys in, one entry per server (the
// end-to-end tests read and write it as login does).
type Credentials struct {
	Servers map[string]SavedLogin `json:"servers"`
}

// SavedLogin is one server's entry: the keys a login got, and when.
type SavedLogin struct {
	DeviceKeys
	SavedAt time.Time `json:"saved_at"`
}

// credentialsFile is where login keeps keys: callsign/credentials.json in
// the user's config directory ($XDG_CONFIG_HOME, ~/.config, …).
func credentialsFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the config directory: %w", err)
	}
	return filepath.Join(dir, "callsign", "credentials.json"), nil
}

// saveCredentials adds the server's keys to the credentials file, which
// only the user may read (0600, in a 0700 directory); it is replaced
// atomically, so a crash never leaves half a file.
func saveCredentials(server string, keys DeviceKeys) (string, error) {
	path, err := credentialsFile()
	if err != nil {
		return "", err
	}
	creds := Credentials{Servers: map[string]SavedLogin{}}
	switch data, err := os.ReadFile(path); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", err
	default:
		if err := json.Unmarshal(data, &creds); err != nil {
			return "", fmt.Errorf("%s is not a credentials file (%v); move it away and log in again", path, err)
		}
		if creds.Servers == nil {
			creds.Servers = map[string]SavedLogin{}
		}
	}
	creds.Servers[server] = SavedLogin{DeviceKeys: keys, SavedAt: time.Now().UTC()}
	data, err := json.MarshalIndent(creds, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(data, '\n'))
	if err = errors.Join(err, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
