package console

import (
	"io/fs"
	"testing"
)

// The pages are parsed at the first page served rather than at start-up,
// so a broken template would show only then: every page file must parse
// with the layout.
func TestEveryPageParsesWithTheLayout(t *testing.T) {
	files, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	pages := parsePages()
	if len(pages) != len(files)-1 { // all but the layout
		t.Fatalf("parsed %d pages from %d files", len(pages), len(files))
	}
	for name, page := range pages {
		if page.Lookup("layout.html") == nil {
			t.Errorf("page %s has no layout", name)
		}
	}
}
