-- How each key was made (core.KeyOrigin): api, jwt, console, cli or device.
-- Keys made before this was recorded read 'unknown'.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN origin TEXT NOT NULL DEFAULT 'unknown';

-- +goose Down
ALTER TABLE api_keys DROP COLUMN origin;
