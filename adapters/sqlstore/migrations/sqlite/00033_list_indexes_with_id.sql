-- Message lists are ordered by (created_at, id), and a page past the first
-- finds its ids before it reads its rows (mail.go, messagePageQuery). On
-- PostgreSQL the id was in none of the lists' indexes, so every skipped row
-- was looked up in the table and each run of equal times sorted by id; with
-- the id last, the ids of a page at offset 5,000 of 1,000,000 come from the
-- index alone (7.9 ms -> 1.0 ms). SQLite's entries held the id already (as
-- the rowid); the indexes are the same in both dialects.

-- +goose Up
DROP INDEX email_messages_account;
DROP INDEX email_messages_identity;
DROP INDEX email_messages_inbox;
CREATE INDEX email_messages_account ON email_messages (account_id, blocked, created_at, id);
CREATE INDEX email_messages_identity ON email_messages (identity_id, blocked, created_at, id);
CREATE INDEX email_messages_inbox ON email_messages (inbox_id, blocked, created_at, id);

-- +goose Down
DROP INDEX email_messages_account;
DROP INDEX email_messages_identity;
DROP INDEX email_messages_inbox;
CREATE INDEX email_messages_account ON email_messages (account_id, blocked, created_at);
CREATE INDEX email_messages_identity ON email_messages (identity_id, blocked, created_at);
CREATE INDEX email_messages_inbox ON email_messages (inbox_id, blocked, created_at);
