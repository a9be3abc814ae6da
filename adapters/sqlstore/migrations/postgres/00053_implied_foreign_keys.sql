-- A message's and a thread's account and identity are its inbox's: the
-- foreign key on inbox_id, which cascades from identities and accounts
-- through inboxes, already removes them with either, so their own foreign
-- keys on account_id and identity_id only made each insert check twice
-- more. PostgreSQL checks a foreign key with a query per row (an AFTER
-- trigger): four of the ten a received message cost (issue 32).

-- +goose Up
ALTER TABLE email_messages DROP CONSTRAINT email_messages_account_id_fkey,
    DROP CONSTRAINT email_messages_identity_id_fkey;
ALTER TABLE email_threads DROP CONSTRAINT email_threads_account_id_fkey,
    DROP CONSTRAINT email_threads_identity_id_fkey;

-- +goose Down
ALTER TABLE email_threads ADD FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE,
    ADD FOREIGN KEY (identity_id) REFERENCES identities (id) ON DELETE CASCADE;
ALTER TABLE email_messages ADD FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE,
    ADD FOREIGN KEY (identity_id) REFERENCES identities (id) ON DELETE CASCADE;
