-- The attachments of a stored message keep their bytes in the message's
-- source instead of a second copy: in_source marks them, and position says
-- which part of the source each one is.

-- +goose Up
ALTER TABLE attachments ADD COLUMN in_source BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE attachments DROP COLUMN in_source;
