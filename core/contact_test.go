package core

import (
	"reflect"
	"testing"
	"time"
)

func TestCorrespondentContact(t *testing.T) {
	now := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		who       Correspondent
		ok        bool
		wantEmail string
		wantPhone string
	}{
		{"a sender by email", Correspondent{Email: "Bob@Example.COM", Name: "Bob", Inbox: "me@agents.test"}, true, "Bob@example.com", ""},
		{"a sender by number", Correspondent{Phone: "+14155550100"}, true, "", "+14155550100"},
		{"the identity writing from its own inbox", Correspondent{Email: "ME@agents.test", Inbox: "me@agents.test"}, false, "", ""},
		{"a malformed address", Correspondent{Email: "not an address", Inbox: "me@agents.test"}, false, "", ""},
		{"a number that is not E.164 (a short code)", Correspondent{Phone: "12345"}, false, "", ""},
		{"nobody", Correspondent{}, false, "", ""},
		{"a display name with a line break", Correspondent{Email: "a@b.com", Name: "A\r\nBcc: x"}, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.who.AccountID, tc.who.IdentityID = "A", "I"
			c, ok := tc.who.Contact("C", now)
			if ok != tc.ok {
				t.Fatalf("recorded %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			want := Contact{ID: "C", AccountID: "A", IdentityID: "I", Email: tc.wantEmail, DisplayName: tc.who.Name,
				PhoneNumber: tc.wantPhone, Source: ContactAuto, CreatedAt: now, UpdatedAt: now}
			if !reflect.DeepEqual(c, want) {
				t.Fatalf("contact\n got %+v\nwant %+v", c, want)
			}
		})
	}
}
