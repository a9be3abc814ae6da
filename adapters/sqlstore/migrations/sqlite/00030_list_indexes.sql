-- Message lists leave blocked messages out, and blocked was in no index:
-- each message a page counted or skipped was looked up in the table (on
-- SQLite past the bodies, in overflow pages), so a page's bounded count of
-- 1,000 read thousands of pages. With blocked in the index, between the
-- owner and the time, a page's count and order come from the index alone.

-- +goose Up
DROP INDEX email_messages_account;
DROP INDEX email_messages_identity;
DROP INDEX email_messages_inbox;
CREATE INDEX email_messages_account ON email_messages (account_id, blocked, created_at);
CREATE INDEX email_messages_identity ON email_messages (identity_id, blocked, created_at);
CREATE INDEX email_messages_inbox ON email_messages (inbox_id, blocked, created_at);

-- +goose Down
DROP INDEX email_messages_account;
DROP INDEX email_messages_identity;
DROP INDEX email_messages_inbox;
CREATE INDEX email_messages_account ON email_messages (account_id, created_at);
CREATE INDEX email_messages_identity ON email_messages (identity_id, created_at);
CREATE INDEX email_messages_inbox ON email_messages (inbox_id, created_at);
