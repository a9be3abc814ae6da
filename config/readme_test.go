package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

const (
	readmePath   = "../README.md"
	tableBegin   = "<!-- settings:begin: made from config/settings.go; `make settings-doc` rewrites it -->\n"
	tableEnd     = "<!-- settings:end -->\n"
	updateReadme = "CALLSIGN_UPDATE_README"
)

// settingsTable is the README's table of settings, made from the table.
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, s := range settings {
		def := s.Unset
		switch {
		case s.Default != "":
			def = "`" + s.Default + "`"
		case def == "":
			def = "unset"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.Name, def, s.Doc)
	}
	return b.String()
}

// The README's settings table is the one settings.go makes; with
// CALLSIGN_UPDATE_README=1 (make settings-doc) the test writes it there.
func TestReadmeSettingsTable(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(readme), tableBegin)
	shown, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("README.md has no %q … %q section", tableBegin, tableEnd)
	}
	want := settingsTable()
	if shown == want {
		return
	}
	if os.Getenv(updateReadme) == "1" {
		if err := os.WriteFile(readmePath, []byte(before+tableBegin+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("rewrote README.md's settings table")
		return
	}
	t.Errorf("README.md's settings table is not config/settings.go's; run make settings-doc (%s=1) to rewrite it. Want:\n%s", updateReadme, want)
}

// Each setting has a name, one line of documentation that fits in a table
// cell, and a default or a word on what unset means, never both.
func TestSettingsAreDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range settings {
		switch {
		case seen[s.Name]:
			t.Errorf("%s: twice in the table", s.Name)
		case s.Doc == "" || strings.ContainsAny(s.Doc+s.Unset, "|\n"):
			t.Errorf("%s: the documentation must be one line without |: %q", s.Name, s.Doc)
		case s.Default != "" && s.Unset != "":
			t.Errorf("%s: both a default and Unset %q", s.Name, s.Unset)
		case s.value.parse == nil || s.value.show == nil:
			t.Errorf("%s: no reader", s.Name)
		}
		seen[s.Name] = true
	}
}
