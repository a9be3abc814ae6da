package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/callsign/callsign/"

// pkg is what `go list -json` says of one package, the parts the rules read.
type pkg struct {
	ImportPath   string
	Standard     bool
	Deps         []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// inner are the layers whose whole dependency tree is fenced: each may
// reach, besides the standard library, only the packages named.
var inner = map[string][]string{
	"core":   nil,
	"ports":  {"core"},
	"app":    {"core", "ports"},
	"config": nil,
}

// roots are the composition roots besides the commands: like cmd, they
// wire adapters together. Each names who else may import it (a command
// may import any).
var roots = map[string][]string{
	"internal/server": {"internal/cli", "e2e"}, // the service's wiring
	"internal/cli":    {"e2e"},                 // the command line
	"e2e":             nil,                     // the end-to-end tests
}

// allowed are the imports between adapters that the rule permits, each
// with its reason. Production code has one; the rest are tests wiring real
// neighbours or shared test helpers.
var allowed = map[[2]string]string{
	{"adapters/mcpserver", "client"}:                           "the MCP tools are the Go client's calls, in process or over HTTP",
	{"adapters/ses/sestest", "adapters/transporttest"}:         "the SES fake keeps its sends with the shared provider-fake bookkeeping",
	{"adapters/mailgun/mailguntest", "adapters/transporttest"}: "the Mailgun fake keeps its sends with the shared provider-fake bookkeeping",
}

// allowedInTests are adapters any test may import, with the reason.
var allowedInTests = map[string]string{
	"adapters/memory":                "the in-memory fakes stand in for every driven port",
	"adapters/storetest":             "the one contract suite every store passes",
	"adapters/sqlstore/sqlstoretest": "a migrated store on either dialect",
	"adapters/twilio/twiliotest":     "a local fake of Twilio's REST API",
	"adapters/telnyx/telnyxtest":     "a local fake of Telnyx's REST API",
	"adapters/telephonytest":         "the one contract suite every telephony provider passes",
	"adapters/transporttest":         "the one contract suite every mail transport passes",
	"adapters/resolver/dnstest":      "a loopback DNS server",
}

// allowedTestPairs are the other adapters a test wires in, with the reason.
var allowedTestPairs = map[[2]string]string{
	{"app", "adapters/mailmime"}:                "use cases are tested on messages the real parser reads",
	{"app", "adapters/mailauth"}:                "inbound checks are tested with the real verifier",
	{"app", "adapters/egress"}:                  "sources are tested through the real outbound policy",
	{"adapters/httpapi", "adapters/egress"}:     "the HTTP harness wires the real outbound policy",
	{"adapters/httpapi", "adapters/mailauth"}:   "the HTTP harness wires the real inbound checks",
	{"adapters/httpapi", "adapters/mailmime"}:   "the HTTP harness wires the real MIME parser and composer",
	{"adapters/httpapi", "adapters/numberplan"}: "the HTTP harness wires the real numbering plan",
	{"adapters/httpapi", "adapters/simtel"}:     "the HTTP harness wires the telephony simulator",
	{"adapters/httpapi", "adapters/totp"}:       "the HTTP harness wires the real TOTP generator",
	{"adapters/httpapi", "adapters/twilio"}:     "Twilio's webhooks are tested through the routes that take them",
	{"adapters/imap", "adapters/egress"}:        "IMAP sources dial through the real outbound policy",
	{"adapters/imap", "adapters/mailmime"}:      "the IMAP server serves messages the real parser stored",
	{"adapters/mailauth", "adapters/resolver"}:  "checks run against the real resolver on a loopback DNS server",
	{"adapters/smtpin", "adapters/mailmime"}:    "received mail is parsed by the real parser",
}

// TestLayers holds the module to the dependency rule.
func TestLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-tags", "nomsgpack", "-deps=false", "-json", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	pkgs, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: the module is not all there", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestLayersCatchABreach feeds the rules a module that breaks each of them,
// so a rule that stopped looking would fail here.
func TestLayersCatchABreach(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: module + "core", Deps: []string{"fmt", module + "ports"}, Imports: []string{module + "ports"}},
		{ImportPath: module + "app", Deps: []string{module + "core", module + "adapters/sqlstore"}, Imports: []string{module + "adapters/sqlstore"}},
		{ImportPath: module + "adapters/relay", Imports: []string{module + "adapters/egress"}},
		{ImportPath: module + "adapters/smtpin", XTestImports: []string{module + "adapters/sqlstore"}},
		{ImportPath: module + "adapters/httpapi", TestImports: []string{module + "adapters/memory"}},
		{ImportPath: module + "adapters/mcpserver", Imports: []string{module + "client"}},
		{ImportPath: module + "adapters/twilio", Imports: []string{module + "cmd/callsign"}},
		{ImportPath: module + "adapters/console", Imports: []string{module + "internal/server"}},
		{ImportPath: module + "internal/server", Imports: []string{module + "internal/cli", module + "adapters/relay"}},
		{ImportPath: "fmt", Standard: true},
	}
	got := violations(pkgs)
	want := []string{
		"core imports ports",
		"app imports adapters/sqlstore",
		"adapters/relay imports adapters/egress",
		"adapters/smtpin's tests import adapters/sqlstore",
		"adapters/twilio imports cmd/callsign",
		"adapters/console imports internal/server",
		"internal/server imports internal/cli",
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d of them", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("violation %d = %q, want it to begin %q", i, got[i], w)
		}
	}
}

func decode(out []byte) ([]pkg, error) {
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// violations lists each import that breaks the rule, in the packages'
// order, one line each.
func violations(pkgs []pkg) []string {
	var found []string
	for _, p := range pkgs {
		if p.Standard || !strings.HasPrefix(p.ImportPath, module) {
			continue
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		if reach, fenced := inner[name]; fenced {
			for _, d := range p.Deps {
				if dep, ours := strings.CutPrefix(d, module); ours && dep != name && !slices.Contains(reach, dep) {
					found = append(found, fmt.Sprintf("%s imports %s: %s may import only %v and the standard library", name, dep, name, reach))
				}
			}
		}
		if _, fenced := inner[name]; !fenced {
			found = append(found, edges(name, p.Imports, false)...)
		}
		found = append(found, edges(name, append(p.TestImports, p.XTestImports...), true)...)
	}
	return found
}

// edges checks one package's direct imports of the module's own packages:
// nothing but a command imports a command, a composition root is imported
// only by a command or where roots says, and an adapter (or the Go client)
// is imported only by cmd and the roots, or where the allow-lists say why.
func edges(name string, imports []string, test bool) []string {
	who := name + " imports"
	if test {
		who = name + "'s tests import"
	}
	var found []string
	for _, imp := range imports {
		dep, ours := strings.CutPrefix(imp, module)
		switch {
		case !ours || sameAdapter(name, dep):
		case strings.HasPrefix(dep, "cmd/"):
			found = append(found, fmt.Sprintf("%s %s: a command is imported by nothing", who, dep))
		case isRoot(dep):
			if !strings.HasPrefix(name, "cmd/") && !slices.Contains(roots[dep], name) {
				found = append(found, fmt.Sprintf("%s %s: only cmd and %v import it", who, dep, roots[dep]))
			}
		case strings.HasPrefix(name, "cmd/"), isRoot(name), !isAdapter(dep) && dep != "client":
		case allowed[[2]string{name, dep}] != "":
		case test && (allowedInTests[dep] != "" || allowedTestPairs[[2]string{name, dep}] != ""):
		default:
			found = append(found, fmt.Sprintf("%s %s: only cmd wires adapters together (or add it to an allow-list with its reason)", who, dep))
		}
	}
	return found
}

func isAdapter(name string) bool { return strings.HasPrefix(name, "adapters/") }

func isRoot(name string) bool { _, ok := roots[name]; return ok }

// sameAdapter reports whether two packages are one adapter and its helpers
// (adapters/sqlstore and adapters/sqlstore/sqlstoretest).
func sameAdapter(a, b string) bool {
	if !isAdapter(a) || !isAdapter(b) {
		return false
	}
	root := func(s string) string { return strings.Join(strings.SplitN(s, "/", 3)[:2], "/") }
	return root(a) == root(b)
}
