-- An MMS keeps its media as a list of the provider's URLs and content
-- types (JSON), shown as the message's attachments.

-- +goose Up
ALTER TABLE sms_messages ADD COLUMN media TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sms_messages DROP COLUMN media;
