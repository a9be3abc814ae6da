package core

import (
	"slices"
	"strings"
	"testing"
)

func TestParseLabel(t *testing.T) {
	for in, want := range map[string]string{
		"todo": "todo", "Needs-Reply": "needs-reply", "v1.2_beta": "v1.2_beta", "0day": "0day",
		"$Forwarded": "$forwarded", "$label1": "$label1", strings.Repeat("a", MaxLabelLength): strings.Repeat("a", MaxLabelLength),
	} {
		got, err := ParseLabel("label", in)
		if err != nil || got != want {
			t.Errorf("ParseLabel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-x", ".x", "_x", "$", "$$x", "a$", "a b", "a/b", "a,b", "é", "a\x00", "\\Seen",
		strings.Repeat("a", MaxLabelLength+1), "$" + strings.Repeat("a", MaxLabelLength)} {
		if got, err := ParseLabel("label", in); KindOf(err) != KindInvalid {
			t.Errorf("ParseLabel(%q) = %q, %v; want Invalid", in, got, err)
		}
	}
}

func TestParseLabels(t *testing.T) {
	got, err := ParseLabels("labels", " A, b ,a")
	if err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("ParseLabels = %q, %v", got, err)
	}
	if got, err := ParseLabels("labels", ""); got != nil || err != nil {
		t.Errorf("ParseLabels(\"\") = %q, %v", got, err)
	}
	if _, err := ParseLabels("labels", "a,,b"); KindOf(err) != KindInvalid {
		t.Errorf("an empty label in a list: %v", err)
	}
	many := make([]string, MaxLabels+1)
	for i := range many {
		many[i] = string(rune('a'+i%26)) + strings.Repeat("x", i/26)
	}
	if _, err := ParseLabels("labels", strings.Join(many, ",")); KindOf(err) != KindInvalid {
		t.Errorf("%d labels in a filter: %v", len(many), err)
	}
}

func TestAddRemoveLabel(t *testing.T) {
	labels, changed, err := AddLabel(nil, "b")
	labels, changed2, err2 := AddLabel(labels, "a")
	if err != nil || err2 != nil || !changed || !changed2 || !slices.Equal(labels, []string{"a", "b"}) {
		t.Fatalf("AddLabel: %q %v %v %v %v", labels, changed, changed2, err, err2)
	}
	if again, changed, err := AddLabel(labels, "a"); changed || err != nil || !slices.Equal(again, labels) {
		t.Errorf("adding a label twice changed %q: %v %v", again, changed, err)
	}
	full := make([]string, 0, MaxLabels)
	for i := range MaxLabels {
		full, _, _ = AddLabel(full, string(rune('a'+i)))
	}
	if _, _, err := AddLabel(full, "zz"); KindOf(err) != KindConflict {
		t.Errorf("the %dth label: %v; want Conflict", MaxLabels+1, err)
	}
	if _, changed, err := AddLabel(full, "a"); changed || err != nil {
		t.Errorf("a label a full message carries: %v %v; want no change, no error", changed, err)
	}
	rest, changed := RemoveLabel(labels, "a")
	if !changed || !slices.Equal(rest, []string{"b"}) || !slices.Equal(labels, []string{"a", "b"}) {
		t.Errorf("RemoveLabel = %q %v (input now %q)", rest, changed, labels)
	}
	if _, changed := RemoveLabel(rest, "a"); changed {
		t.Error("removing a missing label changed the labels")
	}
}

func TestHasLabels(t *testing.T) {
	m := []string{"a", "b"}
	for _, c := range []struct {
		all, none []string
		want      bool
	}{{nil, nil, true}, {[]string{"a", "b"}, nil, true}, {[]string{"a", "c"}, nil, false}, {nil, []string{"c"}, true},
		{[]string{"a"}, []string{"b"}, false}} {
		if got := HasLabels(m, c.all, c.none); got != c.want {
			t.Errorf("HasLabels(%q, %q, %q) = %v", m, c.all, c.none, got)
		}
	}
	if got := UnionLabels([]string{"b", "c"}, nil, []string{"a", "b"}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("UnionLabels = %q", got)
	}
}

func TestLabelEvent(t *testing.T) {
	m := EmailMessage{AccountID: "acc", IdentityID: "id"}
	if e := LabelEvent(m, "x", true); e.Type != EmailLabeled || e.IdentityID != "id" || e.Subject.(Labeling).Label != "x" {
		t.Errorf("added: %+v", e)
	}
	if e := LabelEvent(m, "x", false); e.Type != EmailUnlabeled || !ValidEventPattern("email.unlabeled") {
		t.Errorf("removed: %+v", e)
	}
}
