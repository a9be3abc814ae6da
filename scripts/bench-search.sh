#!/usr/bin/env bash
# Search figures, against the real binary with the team's load generator
# (../shared/tools/smtpload): SQLite always, PostgreSQL when
# CALLSIGN_TEST_POSTGRES_URL is set.
#
# 1. What the search index costs SMTP ingest: runs of N messages (c=4)
#    against a binary without the index (BIN_OFF, built from the commit
#    before it) and one with it (this tree), interleaved, each on a fresh
#    database.
# 2. Search latency (p50/p99 of GET /api/email-messages/?q=…) with FILL
#    messages stored: a word nearly every message holds (smtpload's
#    vocabulary is small), a phrase, a word none holds, and the common word
#    in plain recency.
#
# BIN_OFF: this tree with sqlstore's indexMessage returning at once is the
# fairest (a binary of the commit before the index carries every other
# change since); FILL=0 measures ingest only. Each ingest run also prints
# the CPU time per message of the server and, on PostgreSQL, of its
# backends (from /proc, so the database must run on this machine), and the
# load average: on a shared machine the ratio of CPU per message is the
# steadier figure.
#
#   BIN_OFF=/tmp/callsign-before-search scripts/bench-search.sh
#   FILL=1000000 N=3000 RUNS=5 BIN_OFF=… scripts/bench-search.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SMTPLOAD_DIR=${SMTPLOAD_DIR:-../shared/tools/smtpload}
BIN_OFF=${BIN_OFF:?set BIN_OFF to a callsign binary built without the search index}
N=${N:-2000}
C=${C:-4}
RUNS=${RUNS:-3}
FILL=${FILL:-100000}
HTTP_PORT=${HTTP_PORT:-18180}
SMTP_PORT=${SMTP_PORT:-12625}

mkdir -p bin bench/results
(cd "$SMTPLOAD_DIR" && go build -o "$OLDPWD/bin/smtpload" .)
make -s build
# One file per run: a second run the same day must not overwrite the first.
out="bench/results/$(date -u +%Y-%m-%dT%H%M)-search.jsonl"

server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

# start_server BINARY DIALECT: a fresh database and data directory.
start_server() {
  local bin=$1 dialect=$2 data
  data=$(mktemp -d)
  export CALLSIGN_DATA_DIR=$data CALLSIGN_HTTP_ADDR=127.0.0.1:$HTTP_PORT CALLSIGN_SMTP_ADDR=127.0.0.1:$SMTP_PORT \
    CALLSIGN_IMAP_ADDR=127.0.0.1:0 CALLSIGN_MAIL_DOMAINS=agents.test CALLSIGN_LOG_LEVEL=warn CALLSIGN_RATE_LIMIT=off
  if [ "$dialect" = postgres ]; then
    local schema="bench_search_$(date +%s%N)"
    psql "$CALLSIGN_TEST_POSTGRES_URL" -qc "CREATE SCHEMA $schema" >/dev/null
    case "$CALLSIGN_TEST_POSTGRES_URL" in
      *\?*) export CALLSIGN_DATABASE_URL="$CALLSIGN_TEST_POSTGRES_URL&search_path=$schema&application_name=$schema" ;;
      *) export CALLSIGN_DATABASE_URL="$CALLSIGN_TEST_POSTGRES_URL?search_path=$schema&application_name=$schema" ;;
    esac
    app=$schema
  else
    unset CALLSIGN_DATABASE_URL
  fi
  "$bin" serve >/dev/null 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/api/health/ping/" >/dev/null && break
    sleep 0.1
  done
  KEY=$("$bin" account create --email "bench-$dialect@example.com" | sed 's/.*"management_key":"\([^"]*\)".*/\1/')
  RCPTS=""
  for i in 1 2 3 4; do
    curl -sf -X POST "http://127.0.0.1:$HTTP_PORT/api/identities/" -H "Authorization: Bearer $KEY" \
      -d "name=agent$i" -d "email_identifier=agent$i" >/dev/null
    RCPTS="$RCPTS${RCPTS:+,}agent$i@agents.test"
  done
}

# cpu_ticks: the CPU time (clock ticks) the server and, on PostgreSQL, its
# backends have used.
cpu_ticks() {
  local pids=$server_pid
  [ "$1" = postgres ] && pids="$pids $(psql "$CALLSIGN_TEST_POSTGRES_URL" -Atc "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'")"
  local ours=0 db=0 pid
  for pid in $pids; do
    t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
    if [ "$pid" = "$server_pid" ]; then ours=$t; else db=$((db + t)); fi
  done
  echo "$ours $db"
}

stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

probe() { # LABEL QUERY
  ./bin/smtpload -n 0 -label "$1" -json -probe-n 200 -auth "Bearer $KEY" \
    -http-probe "http://127.0.0.1:$HTTP_PORT/api/email-messages/?limit=50&$2" | tee -a "$out"
}

dialects="sqlite"
[ -n "${CALLSIGN_TEST_POSTGRES_URL:-}" ] && dialects="sqlite postgres"
for dialect in $dialects; do
  for _ in $(seq "$RUNS"); do
    for variant in off on; do
      bin=./bin/callsign
      [ "$variant" = off ] && bin=$BIN_OFF
      start_server "$bin" "$dialect"
      read -r ours0 db0 < <(cpu_ticks "$dialect")
      ./bin/smtpload -addr "127.0.0.1:$SMTP_PORT" -n "$N" -c "$C" -rcpt "$RCPTS" -label "$dialect ingest c=$C index=$variant" -json | tee -a "$out"
      read -r ours1 db1 < <(cpu_ticks "$dialect")
      tick_ms=$((1000 / $(getconf CLK_TCK)))
      echo "$dialect index=$variant: CPU per message ours $(((ours1 - ours0) * tick_ms * 1000 / N)) µs, the database's $(((db1 - db0) * tick_ms * 1000 / N)) µs; load $(cut -d' ' -f1-3 /proc/loadavg)"
      stop_server
    done
  done
  [ "$FILL" -gt 0 ] || continue
  start_server ./bin/callsign "$dialect"
  ./bin/smtpload -addr "127.0.0.1:$SMTP_PORT" -n "$FILL" -c 16 -rcpt "$RCPTS" -run-id "fill$dialect" -json >/dev/null
  probe "$dialect q=invoice (in nearly every message), $FILL stored" "q=invoice"
  probe "$dialect q=\"error budget\" (a phrase), $FILL stored" "q=%22error%20budget%22"
  probe "$dialect q=xylophone (in none), $FILL stored" "q=xylophone"
  probe "$dialect q=invoice ordering=-created_dt, $FILL stored" "q=invoice&ordering=-created_dt"
  probe "$dialect q=invoice from:loadgen is:unread, $FILL stored" "q=invoice%20from%3Aloadgen%20is%3Aunread"
  ./bin/smtpload -n 0 -label "$dialect threads q=invoice, $FILL stored" -json -probe-n 200 -auth "Bearer $KEY" \
    -http-probe "http://127.0.0.1:$HTTP_PORT/api/email-inbox/?limit=50&q=invoice" | tee -a "$out"
  stop_server
done

./bin/smtpload -summarize "$out"
