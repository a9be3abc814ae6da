-- The one-time code and sign-in link a received message carries, found once
-- at receipt (core.FindVerification); '' for none. The partial indexes hold
-- only messages that carry one, so an identity's verifications are read
-- without scanning its mail. Messages received before this migration are
-- not examined.

-- +goose Up
ALTER TABLE email_messages ADD COLUMN verification_code TEXT NOT NULL DEFAULT '';
ALTER TABLE email_messages ADD COLUMN verification_link TEXT NOT NULL DEFAULT '';
ALTER TABLE sms_messages ADD COLUMN verification_code TEXT NOT NULL DEFAULT '';
ALTER TABLE sms_messages ADD COLUMN verification_link TEXT NOT NULL DEFAULT '';
CREATE INDEX email_messages_verification ON email_messages (identity_id, created_at)
    WHERE verification_code <> '' OR verification_link <> '';
CREATE INDEX sms_messages_verification ON sms_messages (identity_id, created_at)
    WHERE verification_code <> '' OR verification_link <> '';

-- +goose Down
DROP INDEX sms_messages_verification;
DROP INDEX email_messages_verification;
ALTER TABLE sms_messages DROP COLUMN verification_link;
ALTER TABLE sms_messages DROP COLUMN verification_code;
ALTER TABLE email_messages DROP COLUMN verification_link;
ALTER TABLE email_messages DROP COLUMN verification_code;
