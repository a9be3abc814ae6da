package core

import (
	"strings"
	"testing"
	"time"
)

func TestLimitsAllow(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	limits := Limits{QuotaStorage: 1000, QuotaIdentities: 2, QuotaInboxes: 3, QuotaVaultItems: 5, QuotaSendsPerHour: 10}
	used := func(u map[Quota]int64) Usage {
		return Usage{Used: u, OldestSend: now.Add(-59*time.Minute - 30*time.Second)}
	}
	for _, tc := range []struct {
		act   Act
		used  map[Quota]int64
		quota Quota // "" when allowed
		kind  Kind
	}{
		{ActCreateIdentity, map[Quota]int64{QuotaIdentities: 1, QuotaInboxes: 2}, "", 0},
		{ActCreateIdentity, map[Quota]int64{QuotaIdentities: 2, QuotaInboxes: 0}, QuotaIdentities, KindForbidden},
		// An identity brings its inbox: room for identities is not enough.
		{ActCreateIdentity, map[Quota]int64{QuotaIdentities: 0, QuotaInboxes: 3}, QuotaInboxes, KindForbidden},
		{ActCreateInbox, map[Quota]int64{QuotaInboxes: 4}, QuotaInboxes, KindForbidden},
		{ActBuyNumber, map[Quota]int64{QuotaPhones: 1000}, "", 0}, // phones unlimited here
		{ActStoreVaultItem, map[Quota]int64{QuotaVaultItems: 5}, QuotaVaultItems, KindForbidden},
		{ActReceiveMail, map[Quota]int64{QuotaStorage: 999}, "", 0},
		{ActReceiveMail, map[Quota]int64{QuotaStorage: 1000}, QuotaStorage, KindForbidden},
		{ActUpload, map[Quota]int64{QuotaStorage: 1001}, QuotaStorage, KindForbidden},
		{ActSaveDraft, map[Quota]int64{QuotaStorage: 1000}, QuotaStorage, KindForbidden},
		{ActSendMail, map[Quota]int64{QuotaStorage: 1000, QuotaSendsPerHour: 0}, QuotaStorage, KindForbidden},
		{ActSendMail, map[Quota]int64{QuotaStorage: 0, QuotaSendsPerHour: 10}, QuotaSendsPerHour, KindRateLimited},
		{ActSendSMS, map[Quota]int64{QuotaSendsPerHour: 9}, "", 0},
		{ActAddDomain, nil, "", 0},
	} {
		err := limits.Allow(tc.act, used(tc.used), now)
		if QuotaOf(err) != tc.quota || tc.quota != "" && KindOf(err) != tc.kind {
			t.Errorf("%s with %v: %v (quota %q, kind %d), want quota %q", tc.act, tc.used, err, QuotaOf(err), KindOf(err), tc.quota)
			continue
		}
		if tc.quota != "" && !strings.Contains(err.Error(), "Quota "+string(tc.quota)+" reached") {
			t.Errorf("%s: %q does not name the quota", tc.act, err)
		}
	}
	// The next send is free when the oldest in the window leaves it: 30 s.
	err := limits.Allow(ActSendSMS, used(map[Quota]int64{QuotaSendsPerHour: 10}), now)
	if e, ok := err.(*Error); !ok || e.RetryAfterSeconds != 30 {
		t.Fatalf("retry after: %+v", err)
	}
	if got := limits.Limiting(ActSendMail); len(got) != 2 || (Limits{}).Limiting(ActSendMail) != nil {
		t.Fatalf("limiting: %v", got)
	}
}

func TestActsNeedingASubscription(t *testing.T) {
	inactive := Account{}
	for _, act := range []Act{ActReceiveMail, ActUpload, ActStoreVaultItem, ActSaveDraft} {
		if err := inactive.Allows(act); err != nil {
			t.Errorf("%s: %v", act, err)
		}
	}
	for _, act := range []Act{ActCreateIdentity, ActCreateInbox, ActBuyNumber, ActAddDomain, ActSendMail, ActSendSMS} {
		if KindOf(inactive.Allows(act)) != KindPaymentRequired {
			t.Errorf("%s is allowed without a subscription", act)
		}
	}
}

// Stored bytes are bytes, not characters: "é" is two.
func TestStoredBytes(t *testing.T) {
	text := "héllo"
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"message", MessageStoredBytes([]byte("Subject: é\r\n\r\nx")), 16},
		{"upload", AttachmentStoredBytes([]byte("abc"), false), 3},
		{"attachment in its message's source", AttachmentStoredBytes([]byte("abc"), true), 0},
		{"draft with text and HTML", DraftStoredBytes(Draft{Content: &text, HTML: "<p>é</p>"}), 6 + 9},
		{"draft with HTML only", DraftStoredBytes(Draft{HTML: "<p>é</p>"}), 9},
		{"empty draft", DraftStoredBytes(Draft{}), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, tc.got, tc.want)
		}
	}
}
