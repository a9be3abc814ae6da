-- A device login grants one key: an identity key (the default) or, when
-- the person chooses it, a management key, which has no identity. The
-- client may ask for one (requested_*), which the approval page only
-- preselects; key_type is what the person approved ('' until then).
-- Grants approved before this migration hand out an identity key.

-- +goose Up
ALTER TABLE device_grants ADD COLUMN requested_key_type TEXT NOT NULL DEFAULT 'identity'
    CHECK (requested_key_type IN ('identity', 'management'));
ALTER TABLE device_grants ADD COLUMN requested_identity TEXT NOT NULL DEFAULT '';
ALTER TABLE device_grants ADD COLUMN key_type TEXT NOT NULL DEFAULT ''
    CHECK (key_type IN ('', 'identity', 'management'));
UPDATE device_grants SET key_type = 'identity' WHERE status IN ('approved', 'redeemed');
ALTER TABLE device_grants DROP CONSTRAINT device_grants_check1;
ALTER TABLE device_grants ADD CONSTRAINT device_grants_check1
    CHECK ((status IN ('approved', 'redeemed') AND key_type = 'identity') = (identity_id IS NOT NULL));

-- +goose Down
DELETE FROM device_grants WHERE key_type = 'management';
ALTER TABLE device_grants DROP CONSTRAINT device_grants_check1;
ALTER TABLE device_grants ADD CONSTRAINT device_grants_check1
    CHECK ((status IN ('approved', 'redeemed')) = (identity_id IS NOT NULL));
ALTER TABLE device_grants DROP COLUMN key_type;
ALTER TABLE device_grants DROP COLUMN requested_identity;
ALTER TABLE device_grants DROP COLUMN requested_key_type;
