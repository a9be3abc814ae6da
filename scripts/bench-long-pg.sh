#!/usr/bin/env bash
# Lists and search with a million messages in one inbox on PostgreSQL (issues
# 12 and 16; not in CI). Receiving 1,000,000 messages over SMTP takes hours
# here, so the schema is grown the way scripts/bench-long.sh grows SQLite:
# SEED messages are received over SMTP by the real service, then copied in
# SQL, each round older than everything stored, until the next of SIZES is
# reached; at each size the list pages and the searches are probed over HTTP.
#
#   scripts/bench-long-pg.sh                       # 100,000 then 1,000,000
#   SIZES=300000 SCHEMA=pgm_small scripts/bench-long-pg.sh
#   KEEP=1 …                   # leave the schema (and its key) for another run
#   SKIP_GROW=1 SCHEMA=… …     # probe a kept schema as it is
#   BENCH_LOCK=/work/bench.lock …   # the probes of each size hold this lock (flock)
#   BINS="/tmp/callsign-before ./bin/callsign" …   # binaries side by side on
#                              # the same schema, their probes interleaved
#
# A copy is a whole message as the store keeps it: its row (new id below every
# stored one, time shifted back by the stored span, Message-ID and
# references renamed per round so threading stays within the copies), its
# source, its search row (the same tsvector), its attachments, and its thread
# (renamed per round, its counts and last time taken from the copies). Events
# are not copied: the event log is read by neither lists nor search. Triggers
# are off while copying (session_replication_role = replica; the copies are
# consistent by construction), so the account's storage_bytes is added in
# one statement per round. VACUUM ANALYZE follows each growth, as the test
# server runs without autovacuum.
#
# Result lines (JSON, each with the load average when it was taken) go to
# bench/results/<date>-long-pg.jsonl; medians are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${CALLSIGN_TEST_POSTGRES_URL:?set CALLSIGN_TEST_POSTGRES_URL}"
SMTPLOAD_DIR=${SMTPLOAD_DIR:-../shared/tools/smtpload}
SCHEMA=${SCHEMA:-bench_long_pg}
SIZES=${SIZES:-"100000 1000000"}
SEED=${SEED:-4000}
LIST_N=${LIST_N:-500}     # requests per list probe
SEARCH_N=${SEARCH_N:-100} # requests per search probe
ROUNDS=${ROUNDS:-1}       # probes of each binary, interleaved
HTTP_PORT=${HTTP_PORT:-18290}
SMTP_PORT=${SMTP_PORT:-12690}
BINS=${BINS:-./bin/callsign}

mkdir -p bin bench/results
(cd "$SMTPLOAD_DIR" && go build -o "$OLDPWD/bin/smtpload" .)
case " $BINS " in *" ./bin/callsign "*) make -s build ;; esac
out="bench/results/$(date -u +%Y-%m-%dT%H%M)-long-pg.jsonl"
state=bench/state-$SCHEMA # the key and vault key of a kept schema
psql() { command psql "$CALLSIGN_TEST_POSTGRES_URL" -v ON_ERROR_STOP=1 -qAt "$@"; }
case "$CALLSIGN_TEST_POSTGRES_URL" in
  *\?*) db_url="$CALLSIGN_TEST_POSTGRES_URL&search_path=$SCHEMA" ;;
  *) db_url="$CALLSIGN_TEST_POSTGRES_URL?search_path=$SCHEMA" ;;
esac

server_pids=""
cleanup() {
  for p in $server_pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
  if [ -z "${KEEP:-}" ]; then
    psql -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" || true
    rm -rf "$state"
  fi
}
trap cleanup EXIT

# start_server [BIN I]: BIN (the first of BINS) as instance I (0), on
# HTTP_PORT + 2I and SMTP_PORT + 2I.
start_server() {
  local bin=${1:-${BINS%% *}} i=${2:-0}
  CALLSIGN_DATA_DIR=$state CALLSIGN_HTTP_ADDR=127.0.0.1:$((HTTP_PORT + 2 * i)) CALLSIGN_SMTP_ADDR=127.0.0.1:$((SMTP_PORT + 2 * i)) \
    CALLSIGN_IMAP_ADDR=127.0.0.1:0 CALLSIGN_MAIL_DOMAINS=agents.test CALLSIGN_LOG_LEVEL=warn CALLSIGN_RATE_LIMIT=off \
    CALLSIGN_JWT_SECRET=bench-bench-bench-bench-bench-bench CALLSIGN_VAULT_KEY="$(cat "$state/vault_key")" \
    CALLSIGN_DATABASE_URL=$db_url "$bin" serve >>"$state/serve.log" 2>&1 &
  server_pids="$server_pids $!"
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$((HTTP_PORT + 2 * i))/api/health/ping/" >/dev/null && return
    sleep 0.1
  done
  echo "the service did not start:" >&2; tail "$state/serve.log" >&2; exit 1
}

stop_servers() {
  for p in $server_pids; do kill "$p"; wait "$p" 2>/dev/null || true; done
  server_pids=""
}

stored() { psql -c "SELECT count(*) FROM $SCHEMA.email_messages"; }

# A fresh schema: an account with one inbox, its message ids starting high
# enough that every copy's id (below the stored ones) stays positive, then
# SEED messages received over SMTP.
if [ -z "${SKIP_GROW:-}" ] && [ ! -f "$state/key" ]; then
  psql -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" -c "CREATE SCHEMA $SCHEMA"
  rm -rf "$state"; mkdir -p "$state"
  head -c 32 /dev/urandom | base64 >"$state/vault_key"
  start_server
  CALLSIGN_DATA_DIR=$state CALLSIGN_JWT_SECRET=bench-bench-bench-bench-bench-bench CALLSIGN_VAULT_KEY="$(cat "$state/vault_key")" \
    CALLSIGN_DATABASE_URL=$db_url "${BINS%% *}" account create --email "long-pg@example.com" |
    sed 's/.*"management_key":"\([^"]*\)".*/\1/' >"$state/key"
  curl -sf -X POST "http://127.0.0.1:$HTTP_PORT/api/identities/" -H "Authorization: Bearer $(cat "$state/key")" \
    -d "name=agent1" -d "email_identifier=agent1" >/dev/null
  largest=0
  for size in $SIZES; do largest=$size; done
  psql -c "ALTER TABLE $SCHEMA.email_messages ALTER COLUMN id RESTART WITH $((4 * largest))"
  stop_servers; start_server # the service draws ids ahead: from the new start
  ./bin/smtpload -addr "127.0.0.1:$SMTP_PORT" -n "$SEED" -c 16 -rcpt agent1@agents.test -run-id seed >/dev/null
  stop_servers
fi
KEY=$(cat "$state/key")

# grow(round, take): copies of the newest take messages, older and with
# lower ids than every stored one, as the header says.
grow_sql=$(cat <<'SQL'
CREATE FUNCTION pg_temp.grow(round INT, take BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    tag TEXT := '-r' || round;
    dt BIGINT; di BIGINT;
    cols TEXT; sel TEXT;
BEGIN
    SELECT max(created_at) - min(created_at) + 1, max(id) - min(id) + 1 INTO dt, di FROM email_messages;
    CREATE TEMP TABLE copied ON COMMIT DROP AS SELECT id FROM email_messages ORDER BY id DESC LIMIT take;
    -- Threads first (their counts and time are set from the copies below).
    SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position),
           string_agg(CASE column_name WHEN 'id' THEN 'id || ' || quote_literal(tag)
                                       WHEN 'last_message_at' THEN 'last_message_at - ' || dt
                                       ELSE quote_ident(column_name) END, ', ' ORDER BY ordinal_position)
      INTO cols, sel FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'email_threads';
    EXECUTE format('INSERT INTO email_threads (%s) SELECT %s FROM email_threads WHERE id IN
        (SELECT thread_id FROM email_messages WHERE id IN (SELECT id FROM copied))', cols, sel);
    SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position),
           string_agg(CASE column_name WHEN 'id' THEN 'id - ' || di
                                       WHEN 'created_at' THEN 'created_at - ' || dt
                                       WHEN 'thread_id' THEN 'thread_id || ' || quote_literal(tag)
                                       WHEN 'message_id' THEN 'replace(message_id, ''@'', ' || quote_literal(tag || '@') || ')'
                                       WHEN 'in_reply_to' THEN 'replace(in_reply_to, ''@'', ' || quote_literal(tag || '@') || ')'
                                       WHEN 'refs' THEN 'replace(refs, ''@'', ' || quote_literal(tag || '@') || ')'
                                       WHEN 'bounce_token' THEN 'NULL'
                                       ELSE quote_ident(column_name) END, ', ' ORDER BY ordinal_position)
      INTO cols, sel FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'email_messages';
    EXECUTE format('INSERT INTO email_messages (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM email_messages
        WHERE id IN (SELECT id FROM copied)', cols, sel);
    INSERT INTO email_sources (message_id, raw) SELECT message_id - di, raw FROM email_sources WHERE message_id IN (SELECT id FROM copied);
    INSERT INTO email_search (email_id, doc) SELECT email_id - di, doc FROM email_search WHERE email_id IN (SELECT id FROM copied);
    SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position),
           string_agg(CASE column_name WHEN 'id' THEN 'gen_random_uuid()'
                                       WHEN 'message_id' THEN 'message_id - ' || di
                                       WHEN 'created_at' THEN 'created_at - ' || dt
                                       ELSE quote_ident(column_name) END, ', ' ORDER BY ordinal_position)
      INTO cols, sel FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'attachments';
    EXECUTE format('INSERT INTO attachments (%s) SELECT %s FROM attachments WHERE message_id IN (SELECT id FROM copied)', cols, sel);
    -- A thread whose messages were copied in part (the last round) counts
    -- only its copies.
    UPDATE email_threads t SET message_count = c.n, unread_count = c.unread, last_message_at = c.last
      FROM (SELECT thread_id, count(*) AS n, max(created_at) AS last,
                   count(*) FILTER (WHERE direction = 'incoming' AND NOT is_read) AS unread
              FROM email_messages WHERE id IN (SELECT id - di FROM copied) GROUP BY thread_id) c
     WHERE t.id = c.thread_id AND (t.message_count, t.unread_count, t.last_message_at) IS DISTINCT FROM (c.n, c.unread, c.last);
    UPDATE accounts a SET storage_bytes = storage_bytes + s.bytes
      FROM (SELECT account_id, sum(stored_bytes) AS bytes FROM email_messages WHERE id IN (SELECT id - di FROM copied) GROUP BY account_id) s
     WHERE a.id = s.account_id;
END
$$;
SQL
)

# probe N LABEL PATH: N requests of PATH to each binary in turn, ROUNDS
# times (the binary's name in the label).
probe() {
  for _ in $(seq "$ROUNDS"); do
    local i=0
    for bin in $BINS; do
      local label=$2
      [ "$BINS" = "${BINS%% *}" ] || label="$2, $bin"
      ./bin/smtpload -n 0 -label "$label" -json -probe-n "$1" \
        -probe-min-bytes 10 -auth "Bearer $KEY" -http-probe "http://127.0.0.1:$((HTTP_PORT + 2 * i))$3" |
        jq -c --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" '. + {loadavg: $load}' | tee -a "$out"
      i=$((i + 1))
    done
  done
}

for size in $SIZES; do
  have=$(stored)
  if [ -z "${SKIP_GROW:-}" ] && [ "$have" -lt "$size" ]; then
    round=$(psql -c "SELECT coalesce(max(substring(id FROM '-r([0-9]+)$')::int), 0) FROM $SCHEMA.email_threads")
    while [ "$have" -lt "$size" ]; do
      round=$((round + 1))
      take=$((size - have < have ? size - have : have))
      echo "round $round: copying $take of $have" >&2
      psql -c "SET search_path = $SCHEMA" -c "SET session_replication_role = replica" -c "$grow_sql" \
        -c "SELECT pg_temp.grow($round, $take)" >/dev/null
      have=$((have + take))
    done
    psql -c "VACUUM ANALYZE $SCHEMA.email_messages, $SCHEMA.email_threads, $SCHEMA.email_search, $SCHEMA.email_sources, $SCHEMA.attachments, $SCHEMA.accounts"
  fi
  i=0
  for bin in $BINS; do start_server "$bin" $i; i=$((i + 1)); done
  if [ -n "${BENCH_LOCK:-}" ]; then exec 8>"$BENCH_LOCK"; flock 8; fi
  total=$(stored)
  api=http://127.0.0.1:$HTTP_PORT/api
  cursor=$(curl -sf "$api/email-messages/?ordering=-created_dt&limit=1&offset=50" -H "Authorization: Bearer $KEY" | jq -r '.results[0].created_dt')
  inbox=$(curl -sf "$api/email-messages/?limit=1" -H "Authorization: Bearer $KEY" | jq '.results[0].inbox')
  probe "$LIST_N" "pg created_after page, $total stored" "/api/email-messages/?created_after=$cursor"
  probe "$LIST_N" "pg first page without a cursor, $total stored" "/api/email-messages/?limit=50"
  probe "$LIST_N" "pg first inbox page without a cursor, $total stored" "/api/email-messages/?inbox=$inbox&limit=50"
  probe "$LIST_N" "pg newest page, $total stored" "/api/email-messages/?ordering=-created_dt&limit=50"
  probe "$LIST_N" "pg page at offset 5000, $total stored" "/api/email-messages/?limit=50&offset=5000"
  probe "$LIST_N" "pg thread list page, $total stored" "/api/email-inbox/?limit=50"
  probe "$LIST_N" "pg thread list, plain, $total stored" "/api/email-inbox/"
  for q in invoice %22error%20budget%22 xylophone invoice%20from%3Aloadgen%20is%3Aunread; do
    probe "$SEARCH_N" "pg q=$q, $total stored" "/api/email-messages/?limit=50&q=$q"
    probe "$SEARCH_N" "pg q=$q ordering=-created_dt, $total stored" "/api/email-messages/?limit=50&ordering=-created_dt&q=$q"
  done
  probe "$SEARCH_N" "pg threads q=invoice, $total stored" "/api/email-inbox/?limit=50&q=invoice"
  [ -z "${BENCH_LOCK:-}" ] || exec 8>&-
  stop_servers
done

./bin/smtpload -summarize "$out"
