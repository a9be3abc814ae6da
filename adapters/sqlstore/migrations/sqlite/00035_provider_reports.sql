-- Mail providers (issue 29). A provider's delivery report (SES through
-- SNS, Mailgun's events) names our message by its Message-ID alone, with
-- no inbox: the partial index finds the one we sent. Mail received
-- through a provider carries the provider's verdicts, not ours:
-- auth_checked_by says whose ('' is ours, from before this column).

-- +goose Up
CREATE INDEX email_messages_sent_message_id ON email_messages (message_id) WHERE direction = 'outgoing';
ALTER TABLE email_messages ADD COLUMN auth_checked_by TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE email_messages DROP COLUMN auth_checked_by;
DROP INDEX email_messages_sent_message_id;
