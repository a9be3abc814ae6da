package httpapi

import (
	"fmt"
	"strings"
	"testing"
)

// labelsOf is the labels field of a message or thread as the API shows it.
func labelsOf(t *testing.T, v map[string]any) string {
	t.Helper()
	l, ok := v["labels"].([]any)
	if !ok {
		t.Fatalf("no labels list: %v", v)
	}
	return strings.Trim(fmt.Sprint(l), "[]")
}

// TestLabels: PUT and DELETE of a message's labels are idempotent, fold
// case, refuse what is no label and a 21st; messages and threads show
// them (a thread the union of its messages'), lists filter on them, and
// each change is one email.labeled or email.unlabeled event.
func TestLabels(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.receive("one@agents.test", mailFrom("ann@example.org", "l1@example.org", "Plans", "First"))
	h.receive("one@agents.test", mailFrom("bob@example.org", "l2@example.org", "Re: Plans", "Second", "In-Reply-To: <l1@example.org>\r\n"))
	h.receive("one@agents.test", mailFrom("cy@example.org", "l3@example.org", "Other", "Third"))
	msgs := h.do("GET", "/api/email-messages/", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)
	id := func(i int) any { return msgs[i].(map[string]any)["id"] }
	label := func(i int, l string) string { return path("/api/email-messages/%v/labels/%s/", id(i), l) }
	after := len(h.do("GET", "/api/events/", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any))

	if got := labelsOf(t, h.do("PUT", label(0, "todo"), nil, tn.keyOne).want(t, 200).object(t)); got != "todo" {
		t.Fatalf("labels after PUT: %s", got)
	}
	h.do("PUT", label(0, "todo"), nil, tn.keyOne).want(t, 200)
	m := h.do("PUT", label(0, "Needs-Reply"), nil, tn.keyOne).want(t, 200).object(t)
	if got := labelsOf(t, m); got != "needs-reply todo" || m["content"] != "First" {
		t.Fatalf("PUT answers the message with its labels, sorted and folded: %v", m)
	}
	h.do("PUT", label(1, "waiting"), nil, tn.keyOne).want(t, 200)
	h.do("PUT", label(2, "todo"), nil, tn.keyOne).want(t, 200)
	for _, bad := range []string{"a%20b", "-x", "%C3%A9t%C3%A9", strings.Repeat("x", 65), "a$b"} {
		res := h.do("PUT", label(0, bad), nil, tn.keyOne).want(t, 400).object(t)
		if _, ok := res["label"]; !ok {
			t.Errorf("label %q: %v", bad, res)
		}
	}
	h.do("PUT", path("/api/email-messages/%d/labels/x/", 1<<40), nil, tn.keyOne).want(t, 404)

	if got := labelsOf(t, h.do("GET", path("/api/email-messages/%v/", id(0)), nil, tn.keyOne).want(t, 200).object(t)); got != "needs-reply todo" {
		t.Fatalf("GET shows %s", got)
	}
	threads := h.do("GET", "/api/email-inbox/", nil, tn.keyOne).want(t, 200).list(t)
	if len(threads) != 2 || labelsOf(t, threads[1]) != "needs-reply todo waiting" || labelsOf(t, threads[0]) != "todo" {
		t.Fatalf("threads: %v", threads)
	}
	detail := h.do("GET", "/api/email-inbox/"+threads[1]["thread_id"].(string)+"/", nil, tn.keyOne).want(t, 200).object(t)
	if labelsOf(t, detail) != "needs-reply todo waiting" || labelsOf(t, detail["messages"].([]any)[1].(map[string]any)) != "waiting" {
		t.Fatalf("thread detail: %v", detail)
	}

	// Filters: every label of labels, none of exclude_labels.
	listed := func(query string) string {
		t.Helper()
		var subjects []string
		for _, r := range h.do("GET", "/api/email-messages/"+query, nil, tn.keyOne).want(t, 200).object(t)["results"].([]any) {
			subjects = append(subjects, r.(map[string]any)["subject"].(string))
		}
		return strings.Join(subjects, ", ")
	}
	for query, want := range map[string]string{
		"?labels=todo": "Plans, Other", "?labels=TODO,needs-reply": "Plans", "?exclude_labels=todo": "Re: Plans",
		"?labels=todo&exclude_labels=needs-reply,waiting": "Other", "?labels=nobody": "",
	} {
		if got := listed(query); got != want {
			t.Errorf("messages %s: %q, want %q", query, got, want)
		}
	}
	threadsOf := func(query string) int {
		return len(h.do("GET", "/api/email-inbox/"+query, nil, tn.keyOne).want(t, 200).list(t))
	}
	for query, want := range map[string]int{"?labels=todo,waiting": 1, "?exclude_labels=waiting": 1, "?labels=todo": 2, "?labels=todo&exclude_labels=todo": 0} {
		if got := threadsOf(query); got != want {
			t.Errorf("threads %s: %d, want %d", query, got, want)
		}
	}
	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf("l%d", i)
	}
	for _, query := range []string{"?labels=a%20b", "?exclude_labels=,", "?labels=" + strings.Join(many, ",")} {
		h.do("GET", "/api/email-messages/"+query, nil, tn.keyOne).want(t, 400)
		h.do("GET", "/api/email-inbox/"+query, nil, tn.keyOne).want(t, 400)
	}

	// DELETE: 204, again 204, and the label is gone.
	h.do("DELETE", label(0, "needs-reply"), nil, tn.keyOne).want(t, 204)
	h.do("DELETE", label(0, "needs-reply"), nil, tn.keyOne).want(t, 204)
	h.do("DELETE", label(0, "never-there"), nil, tn.keyOne).want(t, 204)
	h.do("DELETE", label(0, "no%20way"), nil, tn.keyOne).want(t, 400)
	if got := listed("?labels=needs-reply"); got != "" {
		t.Fatalf("a removed label still lists %q", got)
	}

	// One event per change, with the label and the message as it now is.
	events := h.do("GET", "/api/events/?types=email.labeled,email.unlabeled", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)
	var got []string
	for _, e := range events {
		e := e.(map[string]any)
		data := e["data"].(map[string]any)
		got = append(got, fmt.Sprintf("%s %v %s [%s]", e["type"], data["subject"], data["label"], labelsOf(t, data)))
		if e["identity"] != tn.one {
			t.Errorf("event of identity %v", e["identity"])
		}
	}
	want := []string{"email.labeled Plans todo [todo]", "email.labeled Plans needs-reply [needs-reply todo]",
		"email.labeled Re: Plans waiting [waiting]", "email.labeled Other todo [todo]", "email.unlabeled Plans needs-reply [todo]"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("label events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if all := h.do("GET", "/api/events/", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any); len(all) != after+len(want) {
		t.Fatalf("%d events after %d, want %d more", len(all), after, len(want))
	}

	// At most 20 labels: the 21st is a conflict, one it carries is not.
	for i := 1; i < 20; i++ {
		h.do("PUT", label(2, fmt.Sprintf("l%02d", i)), nil, tn.keyOne).want(t, 200)
	}
	h.do("PUT", label(2, "one-more"), nil, tn.keyOne).want(t, 409)
	h.do("PUT", label(2, "todo"), nil, tn.keyOne).want(t, 200)

	// Fences: another identity's or account's message is not found.
	runScopeCases(t, h, tn, []scopeCase{
		{"PUT", label(1, "fenced"), nil, [4]int{200, 200, 404, 404}, -1},
		{"DELETE", label(1, "fenced"), nil, [4]int{204, 204, 404, 404}, -1},
	})
}
