-- Thread lists leave out threads with no message counted (those of blocked
-- mail alone), and message_count was in no index: a page's bounded count
-- of 1,000 looked up each thread's row, half of a thread page's CPU at
-- 730,000 threads. With message_count in the index, after the time (which
-- every new message changes anyway), the count comes from the index alone.

-- +goose Up
DROP INDEX email_threads_account;
DROP INDEX email_threads_identity;
DROP INDEX email_threads_inbox;
CREATE INDEX email_threads_account ON email_threads (account_id, last_message_at, message_count);
CREATE INDEX email_threads_identity ON email_threads (identity_id, last_message_at, message_count);
CREATE INDEX email_threads_inbox ON email_threads (inbox_id, last_message_at, message_count);

-- +goose Down
DROP INDEX email_threads_account;
DROP INDEX email_threads_identity;
DROP INDEX email_threads_inbox;
CREATE INDEX email_threads_account ON email_threads (account_id, last_message_at);
CREATE INDEX email_threads_identity ON email_threads (identity_id, last_message_at);
CREATE INDEX email_threads_inbox ON email_threads (inbox_id, last_message_at);
