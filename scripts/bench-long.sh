#!/usr/bin/env bash
# The long SQLite cases of issue 12 (not in CI: they take tens of minutes):
#
#  1. the log under a long run: WAL_N messages (200,000) at c=16 into a
#     fresh database, the WAL's size sampled every second, disk per message;
#  2. a database holding BIG messages (1,000,000) in one inbox: ingest at
#     c=16 into it against ingest into a fresh one and the null sink, runs
#     interleaved; then the list pages' latency (created_after cursor, pages
#     without a cursor, the thread list).
#
#   scripts/bench-long.sh                    # all of it
#   CASES=big BIG=300000 scripts/bench-long.sh   # case 2 (ingest and lists)
#   BIG_DIR=/tmp/big CASES=grow scripts/bench-long.sh    # grow and keep it,
#   BIG_DIR=/tmp/big CASES=lists scripts/bench-long.sh   # then reuse it
#
# The big database is grown from SEED messages received over SMTP by
# copying them with older creation times (sqlite3), FILL_SMTP=1 receives
# every message over SMTP instead (hours on a small machine).
# Result lines (JSON) go to bench/results/<date>T<time>-long.jsonl, with the
# server's peak RSS, CPU ticks, disk and largest WAL added to each.
set -euo pipefail
cd "$(dirname "$0")/.."

SMTPLOAD_DIR=${SMTPLOAD_DIR:-../shared/tools/smtpload}
BIN=${BIN:-./bin/callsign} # another build, to compare before and after
CASES=${CASES:-"wal ingest lists"}
CASES=${CASES/big/ingest lists}
WAL_N=${WAL_N:-200000}
BIG=${BIG:-1000000}
SEED=${SEED:-4000}
N=${N:-5000}
RUNS=${RUNS:-3}
HTTP_PORT=${HTTP_PORT:-18090}
SMTP_PORT=${SMTP_PORT:-12590}
SINK_PORT=${SINK_PORT:-12591}
METRICS_PORT=${METRICS_PORT:-18092}

mkdir -p bin bench/results
(cd "$SMTPLOAD_DIR" && go build -o "$OLDPWD/bin/smtpload" .)
make -s build
out="bench/results/$(date -u +%Y-%m-%dT%H%M)-long.jsonl"
: >"$out"
work=$(mktemp -d)
server_pid="" sampler_pid="" sink_pid=""
cleanup() {
  for p in $server_pid $sampler_pid $sink_pid; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# start_server DIR: the binary on the database in DIR (created when new).
start_server() {
  local data=$1
  export CALLSIGN_DATA_DIR=$data CALLSIGN_HTTP_ADDR=127.0.0.1:$HTTP_PORT CALLSIGN_SMTP_ADDR=127.0.0.1:$SMTP_PORT \
    CALLSIGN_IMAP_ADDR=127.0.0.1:0 CALLSIGN_MAIL_DOMAINS=agents.test CALLSIGN_LOG_LEVEL=warn CALLSIGN_RATE_LIMIT=off \
    CALLSIGN_METRICS_ADDR=127.0.0.1:$METRICS_PORT CALLSIGN_QUOTA_STORAGE=0 # a million 5 KB messages are past the default 5 GiB
  unset CALLSIGN_DATABASE_URL
  "$BIN" serve >>"$data/serve.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/api/health/ping/" >/dev/null && break
    sleep 0.1
  done
  if [ ! -f "$data/key" ]; then
    "$BIN" account create --email "long@example.com" | sed 's/.*"management_key":"\([^"]*\)".*/\1/' >"$data/key"
    curl -sf -X POST "http://127.0.0.1:$HTTP_PORT/api/identities/" -H "Authorization: Bearer $(cat "$data/key")" \
      -d "name=agent1" -d "email_identifier=agent1" >/dev/null
  fi
  KEY=$(cat "$data/key")
  # The largest WAL, sampled every second.
  (while kill -0 "$server_pid" 2>/dev/null; do
    w=$(stat -c %s "$data/callsign.db-wal" 2>/dev/null || echo 0)
    [ "$w" -gt "$(cat "$data/walmax" 2>/dev/null || echo 0)" ] && echo "$w" >"$data/walmax"
    echo "$(date +%s) $w" >>"$data/wal.log"
    sleep 1
  done) &
  sampler_pid=$!
}

stop_server() {
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  kill "$sampler_pid" 2>/dev/null || true; wait "$sampler_pid" 2>/dev/null || true
  server_pid="" sampler_pid=""
}

ticks() { awk '{print $14+$15}' "/proc/$server_pid/stat"; }

# restarts: how the running server's restarts of the WAL held the writer
# (the checkpoint's stall of ingest), from its metrics: a JSON object with
# their number, mean and the histogram bucket that holds the longest.
restarts() {
  curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" | awk '
    /^callsign_sqlite_wal_restart_seconds_count/ {n = $2}
    /^callsign_sqlite_wal_restart_seconds_sum/ {sum = $2}
    /^callsign_sqlite_wal_restart_seconds_bucket/ {
      split($1, a, "\""); if (a[2] != "+Inf") {le[++k] = a[2]; c[k] = $2}}
    END {
      max = 0; for (i = k; i >= 1; i--) if (c[i] == n) max = le[i] * 1000
      printf "{\"wal_restarts\": %d, \"wal_restart_mean_ms\": %.2f, \"wal_restart_max_ms_up_to\": %g}\n", n, n ? sum * 1000 / n : 0, max}'
}

# ingest DIR LABEL N: N messages at c=16 into the running server, one JSON
# line with the server's peak RSS during the run (VmHWM reset first), CPU
# ticks, the data directory's size, the largest WAL and how long its
# restarts held the writer.
ingest() {
  local data=$1 label=$2 n=$3 t0 line
  rm -f "$data/walmax"
  echo 5 >"/proc/$server_pid/clear_refs"
  t0=$(ticks)
  line=$(./bin/smtpload -addr "127.0.0.1:$SMTP_PORT" -n "$n" -c 16 -rcpt agent1@agents.test -label "$label" -json)
  echo "$line" | jq -c --argjson hwm "$(awk '/VmHWM/{print $2}' "/proc/$server_pid/status")" \
    --argjson cpu "$(($(ticks) - t0))" --argjson disk "$(du -sk "$data" | cut -f1)" \
    --argjson wal "$(cat "$data/walmax" 2>/dev/null || echo 0)" --argjson restarts "$(restarts)" \
    '. + {vmhwm_kb: $hwm, peer_cpu_ticks: $cpu, disk_kb: $disk, wal_max_bytes: $wal} + $restarts' | tee -a "$out"
}

sink() {
  ./bin/smtpload -sink "127.0.0.1:$SINK_PORT" >/dev/null 2>&1 &
  sink_pid=$!
  sleep 0.3
  ./bin/smtpload -addr "127.0.0.1:$SINK_PORT" -n "$N" -c 16 -label "null sink" -json | tee -a "$out"
  kill -INT "$sink_pid"; wait "$sink_pid" 2>/dev/null || true; sink_pid=""
}

probe() { # LABEL PATH
  ./bin/smtpload -n 0 -label "$1" -json -probe-n 500 -probe-min-bytes 100 -auth "Bearer $KEY" \
    -http-probe "http://127.0.0.1:$HTTP_PORT$2" | tee -a "$out"
}

stored() {
  curl -sf "http://127.0.0.1:$HTTP_PORT/api/email-messages/?limit=1&count=exact" -H "Authorization: Bearer $KEY" | jq .count
}

# grow DIR: a database in DIR holding BIG messages in one inbox, grown from
# SEED received over SMTP by copying them with older creation times.
grow() {
  local big=$1
  start_server "$big"
  ./bin/smtpload -addr "127.0.0.1:$SMTP_PORT" -n "$SEED" -c 16 -rcpt agent1@agents.test -run-id seed >/dev/null
  if [ -n "${FILL_SMTP:-}" ]; then
    ./bin/smtpload -addr "127.0.0.1:$SMTP_PORT" -n $((BIG - SEED)) -c 16 -rcpt agent1@agents.test -run-id fill >/dev/null
  fi
  stop_server
  [ -z "${FILL_SMTP:-}" ] || return 0
  # Copies of the stored messages, their sources and threads, each round
  # older than everything stored and in threads of its own, until BIG are
  # stored.
  local db=$big/callsign.db mcols tcols have=$SEED round=0 take msel tsel
  mcols=$(sqlite3 "$db" "SELECT group_concat(name, ', ') FROM pragma_table_info('email_messages') WHERE name <> 'id'")
  tcols=$(sqlite3 "$db" "SELECT group_concat(name, ', ') FROM pragma_table_info('email_threads')")
  while [ "$have" -lt "$BIG" ]; do
    round=$((round + 1))
    take=$((BIG - have < have ? BIG - have : have))
    msel=${mcols/created_at/created_at - (SELECT d FROM span)}
    msel=${msel/thread_id/thread_id || \'.r$round\'}
    tsel=${tcols/last_message_at/last_message_at - (SELECT d FROM span)}
    tsel="id || '.r$round'${tsel#id}"
    sqlite3 "$db" >/dev/null <<SQL
PRAGMA journal_mode=WAL;
BEGIN;
CREATE TEMP TABLE span AS SELECT max(created_at) - min(created_at) + 1 AS d, max(id) AS top FROM email_messages;
INSERT INTO email_threads ($tcols) SELECT $tsel FROM email_threads;
INSERT INTO email_messages ($mcols) SELECT $msel FROM email_messages ORDER BY id LIMIT $take;
INSERT INTO email_sources (message_id, raw, compressed)
  SELECT m.id, s.raw, s.compressed FROM email_messages m JOIN email_sources s ON s.message_id = m.id - (SELECT top FROM span)
  WHERE m.id > (SELECT top FROM span);
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
    have=$((have + take))
  done
}

# The big database: BIG_DIR's when it holds one (kept after the run, so
# that later runs skip the growing), else a new one in the run's directory.
big=${BIG_DIR:-$work/big}
if [[ " $CASES " =~ \ (ingest|lists|grow)\  ]] && [ ! -f "$big/callsign.db" ]; then
  mkdir -p "$big"
  grow "$big"
fi

for case in $CASES; do
  case $case in
  wal)
    data=$work/wal
    mkdir -p "$data"
    start_server "$data"
    sink
    ingest "$data" "sqlite $WAL_N messages, fresh" "$WAL_N"
    stop_server
    echo "WAL over the run (bytes, sampled each second; largest, then median of the second half):"
    awk '{print $2}' "$data/wal.log" | sort -n | tail -1
    n=$(wc -l <"$data/wal.log")
    tail -n $((n / 2)) "$data/wal.log" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
    rm -rf "$data"
    ;;
  grow) ;; # the big database alone, above
  ingest)
    fresh=$work/fresh
    mkdir -p "$fresh"
    # Ingest into the big database and a fresh one, interleaved.
    for run in $(seq "$RUNS"); do
      sink
      start_server "$big"
      ingest "$big" "sqlite c=16 into $BIG stored" "$N"
      stop_server
      start_server "$fresh"
      ingest "$fresh" "sqlite c=16 into a fresh database" "$N"
      stop_server
      rm -rf "$fresh"/*
    done
    ;;
  lists)
    # List pages with BIG messages stored in one inbox.
    start_server "$big"
    total=$(stored)
    cursor=$(curl -sf "http://127.0.0.1:$HTTP_PORT/api/email-messages/?limit=1&offset=$((total - 50))" -H "Authorization: Bearer $KEY" |
      jq -r '.results[0].created_dt')
    inbox=$(curl -sf "http://127.0.0.1:$HTTP_PORT/api/email-messages/?limit=1" -H "Authorization: Bearer $KEY" | jq '.results[0].inbox')
    probe "created_after page, $total stored" "/api/email-messages/?created_after=$cursor"
    probe "first page without a cursor, $total stored" "/api/email-messages/?limit=50"
    probe "first inbox page without a cursor, $total stored" "/api/email-messages/?inbox=$inbox&limit=50"
    probe "page at offset 5000, $total stored" "/api/email-messages/?limit=50&offset=5000"
    probe "thread list page, $total stored" "/api/email-inbox/?limit=50"
    probe "thread list, plain, $total stored" "/api/email-inbox/"
    stop_server
    ;;
  esac
done

./bin/smtpload -summarize "$out"
# The checkpoint's stall of ingest and the log's size, per ingest run.
jq -r 'select(.wal_restarts != null) | "\(.label): \(.smtp.msgs_per_s | floor)/s, p99 \(.smtp.lat_ms.p99) ms, max \(.smtp.lat_ms.max) ms; " +
  "WAL at most \(.wal_max_bytes / 1048576 | floor) MiB, \(.wal_restarts) restarts holding the writer \(.wal_restart_mean_ms) ms on average, " +
  "the longest at most \(.wal_restart_max_ms_up_to) ms"' "$out"
