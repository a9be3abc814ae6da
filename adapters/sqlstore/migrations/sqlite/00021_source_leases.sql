-- Each IMAP source is pulled by one instance at a time: the instance that
-- holds its lease (claimed_by, an id drawn by each running supervisor)
-- until claimed_until (microseconds), renewed while it runs. A crashed
-- instance's sources are taken over once their leases run out.

-- +goose Up
ALTER TABLE mail_sources ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_sources ADD COLUMN claimed_until INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE mail_sources DROP COLUMN claimed_until;
ALTER TABLE mail_sources DROP COLUMN claimed_by;
