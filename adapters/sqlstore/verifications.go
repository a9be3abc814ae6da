package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type verificationRow struct {
	Source    string `db:"source"`
	ID        int64  `db:"id"`
	Identity  string `db:"identity_id"`
	Sender    string `db:"sender"`
	Code      string `db:"verification_code"`
	Link      string `db:"verification_link"`
	CreatedAt int64  `db:"created_at"`
}

// verificationSelect reads one table's messages that carry a verification;
// its WHERE repeats the partial indexes' condition so they serve it.
const verificationSelect = `SELECT '%s' AS source, id, identity_id, %s AS sender, verification_code, verification_link, created_at
	FROM %s WHERE identity_id = ? AND account_id = ? AND direction = 'incoming'
	AND (verification_code <> '' OR verification_link <> '') AND created_at > ?
	AND (? = '' OR lower(%s) LIKE ? ESCAPE '\')`

func (db *DB) Verifications(ctx context.Context, f ports.VerificationFilter) ([]core.ReceivedVerification, error) {
	pattern := ""
	if f.From != "" {
		pattern = likeContains(f.From)
	}
	after := int64(-1)
	if !f.After.IsZero() {
		after = us(f.After)
	}
	args := []any{f.IdentityID, f.AccountID, after, pattern, pattern}
	var parts []string
	var all []any
	if f.Source == "" || f.Source == core.VerificationByEmail {
		parts = append(parts, fmt.Sprintf(verificationSelect, core.VerificationByEmail, "from_email", "email_messages", "from_email"))
		all = append(all, args...)
	}
	if f.Source == "" || f.Source == core.VerificationBySMS {
		parts = append(parts, fmt.Sprintf(verificationSelect, core.VerificationBySMS, "from_number", "sms_messages", "from_number"))
		all = append(all, args...)
	}
	var rows []verificationRow
	err := db.sel(ctx, &rows, db.q(`SELECT * FROM (`+strings.Join(parts, " UNION ALL ")+`) v ORDER BY created_at DESC, source, id DESC LIMIT ?`),
		append(all, f.Limit)...)
	out := make([]core.ReceivedVerification, len(rows))
	for i, r := range rows {
		out[i] = core.ReceivedVerification{Verification: *core.NewVerification(r.Code, r.Link), Source: core.VerificationSource(r.Source),
			MessageID: r.ID, IdentityID: r.Identity, From: r.Sender, CreatedAt: fromUS(r.CreatedAt)}
	}
	return out, err
}
