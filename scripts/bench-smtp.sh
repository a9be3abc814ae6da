#!/usr/bin/env bash
# Inbound SMTP throughput and latency, and the cursor-polling read, measured
# with the team's load generator (../shared/tools/smtpload) against the real
# binary: SQLite always, PostgreSQL when CALLSIGN_TEST_POSTGRES_URL is set.
#
#   scripts/bench-smtp.sh            # every case
#   N=3000 RUNS=3 scripts/bench-smtp.sh     # messages per run, runs per case
#
# Each ingest run is preceded by a run against the generator's null sink,
# and carries the server's peak RSS, CPU and disk (jq adds them). Result
# lines (JSON) go to bench/results/<date>-smtp.jsonl and a Markdown summary
# (medians, with the sink's rate beside ours) is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

SMTPLOAD_DIR=${SMTPLOAD_DIR:-../shared/tools/smtpload}
N=${N:-3000}
RUNS=${RUNS:-3}
FILL=${FILL:-100000}
HTTP_PORT=${HTTP_PORT:-18080}
SMTP_PORT=${SMTP_PORT:-12525}
SINK_PORT=${SINK_PORT:-12526}

if [ ! -d "$SMTPLOAD_DIR" ]; then
  echo "the load generator is not at $SMTPLOAD_DIR (set SMTPLOAD_DIR)" >&2
  exit 1
fi
mkdir -p bin bench/results
(cd "$SMTPLOAD_DIR" && go build -o "$OLDPWD/bin/smtpload" .)
make -s build
out="bench/results/$(date -u +%Y-%m-%d)-smtp.jsonl"
: >"$out"

server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

# start_server DIALECT: a fresh database and data directory, then the binary.
start_server() {
  local dialect=$1 data
  data=$(mktemp -d)
  export CALLSIGN_DATA_DIR=$data CALLSIGN_HTTP_ADDR=127.0.0.1:$HTTP_PORT CALLSIGN_SMTP_ADDR=127.0.0.1:$SMTP_PORT \
    CALLSIGN_IMAP_ADDR=127.0.0.1:0 CALLSIGN_MAIL_DOMAINS=agents.test CALLSIGN_LOG_LEVEL=warn CALLSIGN_RATE_LIMIT=off
  if [ "$dialect" = postgres ]; then
    local schema="bench_$(date +%s)"
    psql "$CALLSIGN_TEST_POSTGRES_URL" -qc "CREATE SCHEMA $schema" >/dev/null
    case "$CALLSIGN_TEST_POSTGRES_URL" in
      *\?*) export CALLSIGN_DATABASE_URL="$CALLSIGN_TEST_POSTGRES_URL&search_path=$schema" ;;
      *) export CALLSIGN_DATABASE_URL="$CALLSIGN_TEST_POSTGRES_URL?search_path=$schema" ;;
    esac
  else
    unset CALLSIGN_DATABASE_URL
  fi
  ./bin/callsign serve &
  server_pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/api/health/ping/" >/dev/null && break
    sleep 0.1
  done
  KEY=$(./bin/callsign account create --email "bench-$dialect@example.com" | sed 's/.*"management_key":"\([^"]*\)".*/\1/')
  RCPTS=""
  for i in 1 2 3 4; do
    curl -sf -X POST "http://127.0.0.1:$HTTP_PORT/api/identities/" -H "Authorization: Bearer $KEY" \
      -d "name=agent$i" -d "email_identifier=agent$i" >/dev/null
    RCPTS="$RCPTS${RCPTS:+,}agent$i@agents.test"
  done
}

stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

# measure ARGS…: one smtpload run against the server, its JSON line with the
# server's peak RSS during the run (VmHWM reset first), its CPU ticks
# (utime+stime, 10 ms each) and the data directory's size added.
measure() {
  local t0 line
  echo 5 >"/proc/$server_pid/clear_refs"
  t0=$(awk '{print $14+$15}' "/proc/$server_pid/stat")
  line=$(./bin/smtpload "$@" -json)
  echo "$line" | jq -c --argjson hwm "$(awk '/VmHWM/{print $2}' "/proc/$server_pid/status")" \
    --argjson cpu "$(($(awk '{print $14+$15}' "/proc/$server_pid/stat") - t0))" --argjson disk "$(du -sk "$CALLSIGN_DATA_DIR" | cut -f1)" \
    '. + {vmhwm_kb: $hwm, peer_cpu_ticks: $cpu, disk_kb: $disk}' | tee -a "$out"
}

# sink_run C: the generator against the null sink, the ceiling of any server.
sink_run() {
  ./bin/smtpload -sink "127.0.0.1:$SINK_PORT" >/dev/null 2>&1 &
  local sink=$!
  sleep 0.3
  ./bin/smtpload -addr "127.0.0.1:$SINK_PORT" -n "$N" -c "$1" -label "null sink c=$1" -json | tee -a "$out"
  kill -INT "$sink"; wait "$sink" 2>/dev/null || true
}

dialects="sqlite"
[ -n "${CALLSIGN_TEST_POSTGRES_URL:-}" ] && dialects="sqlite postgres"
for dialect in $dialects; do
  start_server "$dialect"
  for attach in 0 20; do
    for c in 1 4 16; do
      for _ in $(seq "$RUNS"); do
        [ "$attach" = 0 ] && sink_run "$c"
        measure -addr "127.0.0.1:$SMTP_PORT" -n "$N" -c "$c" -attach-kb "$attach" -rcpt "$RCPTS" \
          -label "$dialect c=$c attach=${attach}KiB"
      done
    done
  done
  # The cursor-polling read with FILL messages stored: fill, then time
  # GET /api/email-messages/?created_after=<the 50th newest message>.
  have=$(curl -sf "http://127.0.0.1:$HTTP_PORT/api/email-messages/?limit=1&count=exact" -H "Authorization: Bearer $KEY" | sed 's/{"count":\([0-9]*\).*/\1/')
  if [ "$have" -lt "$FILL" ]; then
    ./bin/smtpload -addr "127.0.0.1:$SMTP_PORT" -n $((FILL - have)) -c 16 -rcpt "$RCPTS" -run-id "fill$dialect" -json >/dev/null
  fi
  cursor=$(curl -sf "http://127.0.0.1:$HTTP_PORT/api/email-messages/?limit=1&offset=$((FILL - 50))" -H "Authorization: Bearer $KEY" |
    sed 's/.*"created_dt":"\([^"]*\)".*/\1/')
  for _ in $(seq "$RUNS"); do
    ./bin/smtpload -n 0 -label "$dialect created_after, $FILL stored" -json -probe-n 500 -probe-min-bytes 1000 \
      -auth "Bearer $KEY" -http-probe "http://127.0.0.1:$HTTP_PORT/api/email-messages/?created_after=$cursor" | tee -a "$out"
    ./bin/smtpload -n 0 -label "$dialect page without a cursor, $FILL stored" -json -probe-n 500 -probe-min-bytes 1000 \
      -auth "Bearer $KEY" -http-probe "http://127.0.0.1:$HTTP_PORT/api/email-messages/?limit=50" | tee -a "$out"
    ./bin/smtpload -n 0 -label "$dialect thread list page, $FILL stored" -json -probe-n 500 -probe-min-bytes 1000 \
      -auth "Bearer $KEY" -http-probe "http://127.0.0.1:$HTTP_PORT/api/email-inbox/?limit=50" | tee -a "$out"
  done
  stop_server
done

./bin/smtpload -summarize "$out"
