-- Telephony: phone numbers, text messages with their conversation
-- summaries, and voice-agent settings.

-- +goose Up
CREATE TABLE phone_numbers (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id   UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id  UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    number       TEXT NOT NULL, -- E.164
    country_code TEXT NOT NULL,
    sms          BOOLEAN NOT NULL,
    voice        BOOLEAN NOT NULL,
    mms          BOOLEAN NOT NULL,
    provider     TEXT NOT NULL,
    provider_sid TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE UNIQUE INDEX phone_numbers__identity_id ON phone_numbers (identity_id);
CREATE UNIQUE INDEX phone_numbers__number ON phone_numbers (number);
CREATE INDEX phone_numbers_account ON phone_numbers (account_id, id);

CREATE TABLE sms_messages (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id   UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id  UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    phone_id     BIGINT NOT NULL REFERENCES phone_numbers (id) ON DELETE CASCADE,
    phone_number TEXT NOT NULL,
    from_number  TEXT NOT NULL,
    to_number    TEXT NOT NULL,
    counterpart  TEXT NOT NULL, -- the other party: from_number for incoming, to_number for outgoing
    body         TEXT NOT NULL,
    direction    TEXT NOT NULL CHECK (direction IN ('incoming', 'outgoing')),
    is_read      BOOLEAN NOT NULL DEFAULT FALSE,
    status       TEXT NOT NULL,
    error        TEXT NOT NULL DEFAULT '',
    provider_sid TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL
);
-- A provider's message id is stored once: a webhook delivered twice is one message.
CREATE UNIQUE INDEX sms_messages__provider_sid ON sms_messages (provider_sid) WHERE provider_sid <> '';
CREATE INDEX sms_messages_account ON sms_messages (account_id, created_at);
CREATE INDEX sms_messages_identity ON sms_messages (identity_id, created_at);
CREATE INDEX sms_messages_conversation ON sms_messages (phone_id, counterpart, created_at);

-- Kept up to date as messages arrive and are read, so listing
-- conversations never scans messages.
CREATE TABLE sms_conversations (
    phone_id        BIGINT NOT NULL REFERENCES phone_numbers (id) ON DELETE CASCADE,
    counterpart     TEXT NOT NULL,
    account_id      UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    identity_id     UUID NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    phone_number    TEXT NOT NULL,
    message_count   BIGINT NOT NULL DEFAULT 0,
    unread_count    BIGINT NOT NULL DEFAULT 0,
    preview         TEXT NOT NULL DEFAULT '',
    last_message_at BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (phone_id, counterpart)
);
CREATE INDEX sms_conversations_account ON sms_conversations (account_id, last_message_at);
CREATE INDEX sms_conversations_identity ON sms_conversations (identity_id, last_message_at);

CREATE TABLE voice_agents (
    identity_id  UUID PRIMARY KEY REFERENCES identities (id) ON DELETE CASCADE,
    account_id   UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    response_url TEXT NOT NULL,
    method       TEXT NOT NULL CHECK (method IN ('POST', 'GET')),
    enabled      BOOLEAN NOT NULL,
    updated_at   BIGINT NOT NULL
);

-- +goose Down
DROP TABLE voice_agents;
DROP TABLE sms_conversations;
DROP TABLE sms_messages;
DROP TABLE phone_numbers;
