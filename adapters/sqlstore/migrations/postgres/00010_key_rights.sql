-- An identity key may buy a phone number for its identity only when it was
-- created with can_provision: a number costs money at a real provider.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN can_provision BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN can_provision;
