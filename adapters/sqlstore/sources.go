package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type sourceRow struct {
	ID          string        `db:"id"`
	AccountID   string        `db:"account_id"`
	IdentityID  string        `db:"identity_id"`
	InboxID     int64         `db:"inbox_id"`
	Host        string        `db:"host"`
	Port        int           `db:"port"`
	Username    string        `db:"username"`
	Password    []byte        `db:"password"`
	TLS         string        `db:"tls"`
	Folder      string        `db:"folder"`
	UIDValidity int64         `db:"uid_validity"`
	LastUID     int64         `db:"last_uid"`
	Connected   bool          `db:"connected"`
	LastError   string        `db:"last_error"`
	LastSyncAt  sql.NullInt64 `db:"last_sync_at"`
	CreatedAt   int64         `db:"created_at"`
	UpdatedAt   int64         `db:"updated_at"`
}

func (r sourceRow) core() ports.StoredMailSource {
	return ports.StoredMailSource{
		Source: core.MailSource{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, InboxID: r.InboxID,
			Host: r.Host, Port: r.Port, Username: r.Username, TLS: core.SourceTLS(r.TLS), Folder: r.Folder,
			Progress: core.SourceProgress{UIDValidity: uint32(r.UIDValidity), LastUID: uint32(r.LastUID),
				Connected: r.Connected, LastError: r.LastError, LastSyncAt: fromNullUS(r.LastSyncAt)},
			CreatedAt: fromUS(r.CreatedAt), UpdatedAt: fromUS(r.UpdatedAt)},
		Password: r.Password,
	}
}

const sourceColumns = `id, account_id, identity_id, inbox_id, host, port, username, password, tls, folder,
	uid_validity, last_uid, connected, last_error, last_sync_at, created_at, updated_at`

func (db *DB) SaveMailSource(ctx context.Context, s ports.StoredMailSource) error {
	m, p := s.Source, s.Source.Progress
	_, err := db.w.ExecContext(ctx, db.q(`INSERT INTO mail_sources (`+sourceColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, port = excluded.port, username = excluded.username,
			password = excluded.password, tls = excluded.tls, folder = excluded.folder, uid_validity = excluded.uid_validity,
			last_uid = excluded.last_uid, connected = excluded.connected, last_error = excluded.last_error,
			last_sync_at = excluded.last_sync_at, updated_at = excluded.updated_at`),
		m.ID, m.AccountID, m.IdentityID, m.InboxID, m.Host, m.Port, m.Username, s.Password, string(m.TLS), m.Folder,
		int64(p.UIDValidity), int64(p.LastUID), p.Connected, p.LastError, nullUS(p.LastSyncAt), us(m.CreatedAt), us(m.UpdatedAt))
	return err
}

func (db *DB) MailSource(ctx context.Context, accountID string, inboxID int64) (ports.StoredMailSource, error) {
	var r sourceRow
	err := db.r.GetContext(ctx, &r, db.q(`SELECT `+sourceColumns+` FROM mail_sources WHERE inbox_id = ? AND account_id = ?`), inboxID, accountID)
	return r.core(), notFound(err, "Mail source")
}

// ClaimMailSources takes and renews leases in one conditional UPDATE. On
// PostgreSQL the rows are locked in id order first (FOR UPDATE), so two
// claiming instances queue rather than deadlock, and a claimant that waited
// sees the winner's lease and leaves the row. SKIP LOCKED would not do: a
// renewal would skip its own source while that source's worker records
// progress, and stop the worker. SQLite has one writer at a time anyway.
func (db *DB) ClaimMailSources(ctx context.Context, owner string, now, leaseUntil time.Time) ([]ports.StoredMailSource, error) {
	lock := ""
	if db.dialect == Postgres {
		lock = " ORDER BY id FOR UPDATE"
	}
	var rows []sourceRow
	err := db.w.SelectContext(ctx, &rows, db.q(`UPDATE mail_sources SET claimed_by = ?, claimed_until = ?
		WHERE id IN (SELECT id FROM mail_sources WHERE claimed_by = ? OR claimed_until <= ?`+lock+`)
		RETURNING `+sourceColumns), owner, us(leaseUntil), owner, us(now))
	return toCore(rows), err
}

func (db *DB) ReleaseMailSources(ctx context.Context, owner string) error {
	_, err := db.w.ExecContext(ctx, db.q(`UPDATE mail_sources SET claimed_by = '', claimed_until = 0 WHERE claimed_by = ?`), owner)
	return err
}

func (db *DB) DeleteMailSource(ctx context.Context, accountID string, inboxID int64) error {
	return db.execOne(ctx, "Mail source", `DELETE FROM mail_sources WHERE inbox_id = ? AND account_id = ?`, inboxID, accountID)
}

func (db *DB) SaveSourceProgress(ctx context.Context, id string, version time.Time, p core.SourceProgress) (bool, error) {
	res, err := db.w.ExecContext(ctx, db.q(`UPDATE mail_sources SET uid_validity = ?, last_uid = ?, connected = ?, last_error = ?,
		last_sync_at = ? WHERE id = ? AND updated_at = ?`),
		int64(p.UIDValidity), int64(p.LastUID), p.Connected, p.LastError, nullUS(p.LastSyncAt), id, us(version))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (db *DB) MailboxEntries(ctx context.Context, inboxID int64, dir core.Direction, spam bool) ([]ports.MailboxEntry, error) {
	var rows []struct {
		ID        int64 `db:"id"`
		IsRead    bool  `db:"is_read"`
		Size      int64 `db:"size"`
		CreatedAt int64 `db:"created_at"`
	}
	// stored_bytes is the source's length (core.MessageStoredBytes),
	// which a compressed source's blob is not.
	err := db.r.SelectContext(ctx, &rows, db.q(`SELECT m.id, m.is_read, m.stored_bytes AS size, m.created_at
		FROM email_messages m
		WHERE m.inbox_id = ? AND m.direction = ? AND m.blocked = ? AND `+isSpamCondition(spam, "m.")+` ORDER BY m.id`),
		inboxID, string(dir), false)
	if err != nil {
		return nil, err
	}
	out := make([]ports.MailboxEntry, len(rows))
	at := make(map[int64]int, len(rows))
	for i, r := range rows {
		out[i], at[r.ID] = ports.MailboxEntry{ID: r.ID, IsRead: r.IsRead, Size: r.Size, CreatedAt: fromUS(r.CreatedAt)}, i
	}
	// The account's labels lead: labels are few beside the messages.
	var labels []labelRow
	if err := db.r.SelectContext(ctx, &labels, db.q(`SELECT l.message_id, l.label FROM message_labels l
		JOIN email_messages m ON m.id = l.message_id
		WHERE l.account_id = (SELECT account_id FROM inboxes WHERE id = ?) AND m.inbox_id = ? AND m.direction = ?
		ORDER BY l.message_id, l.label`), inboxID, inboxID, string(dir)); err != nil {
		return nil, err
	}
	for _, l := range labels {
		if i, ok := at[l.MessageID]; ok {
			out[i].Labels = append(out[i].Labels, l.Label)
		}
	}
	return out, nil
}

// isSpamCondition keeps the rows filed as spam, or those that are not
// (is_spam NULL: never judged).
func isSpamCondition(spam bool, prefix string) string {
	if spam {
		return prefix + "is_spam IS TRUE"
	}
	return prefix + "is_spam IS NOT TRUE"
}
