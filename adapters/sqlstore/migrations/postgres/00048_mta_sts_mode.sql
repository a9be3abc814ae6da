-- MTA-STS for custom domains (issue 34): the mode of the policy served
-- for each domain, testing until its owner chooses enforce.

-- +goose Up
ALTER TABLE custom_domains ADD COLUMN mta_sts_mode TEXT NOT NULL DEFAULT 'testing';

-- +goose Down
ALTER TABLE custom_domains DROP COLUMN mta_sts_mode;
