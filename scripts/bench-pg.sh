#!/usr/bin/env bash
# PostgreSQL ingest, one binary against another in the same run, and one
# instance against two on one database: interleaved runs with the null
# sink's rate beside each (the machine is shared, so only ratios within a
# run count).
#
#   scripts/bench-pg.sh BIN...            # each binary, one instance
#   INSTANCES="1 2 2a" scripts/bench-pg.sh BIN...   # and two instances on one schema
#                                         # (2: one account, 2a: one account each)
#   N=3000 C=16 RUNS=3 …                  # messages per instance, connections per instance
#   WAITS=1 …                             # sample the backends' states (pg_stat_activity)
#
# Every run gets a fresh schema. With two instances each gets its own
# generator (N messages over C connections); the rate is their sum. Result
# lines (JSON, the binary and instance count in the label; server CPU per
# message, ours and the PostgreSQL backends serving us) go to
# bench/results/<date>-pg.jsonl; medians are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${CALLSIGN_TEST_POSTGRES_URL:?set CALLSIGN_TEST_POSTGRES_URL}"
SMTPLOAD=${SMTPLOAD:-bin/smtpload}
N=${N:-3000}
C=${C:-16}
RUNS=${RUNS:-3}
INSTANCES=${INSTANCES:-1}
PORT_BASE=${PORT_BASE:-13000}
[ "$#" -gt 0 ] || { echo "usage: $0 BIN..." >&2; exit 2; }
[ -x "$SMTPLOAD" ] || (cd ../shared/tools/smtpload && go build -o "$OLDPWD/$SMTPLOAD" .)
mkdir -p bench/results
out="bench/results/$(date -u +%Y-%m-%dT%H%M)-pg.jsonl"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# The instances' connections carry the schema as application_name, so that
# their backends' CPU can be counted.
url_with_schema() {
  case "$CALLSIGN_TEST_POSTGRES_URL" in
    *\?*) echo "$CALLSIGN_TEST_POSTGRES_URL&search_path=$1&application_name=$1" ;;
    *) echo "$CALLSIGN_TEST_POSTGRES_URL?search_path=$1&application_name=$1" ;;
  esac
}

# backend_ticks SCHEMA: "pid ticks" of each backend serving SCHEMA's instances.
backend_ticks() {
  for p in $(psql "$CALLSIGN_TEST_POSTGRES_URL" -Atc "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'"); do
    [ -r "/proc/$p/stat" ] && echo "$p $(awk '{print $14+$15}' "/proc/$p/stat")"
  done
  true
}

# start BIN I SCHEMA: instance I of BIN on SCHEMA; sets pid.
start() {
  local bin=$1 i=$2 schema=$3 http=$((PORT_BASE + 10 * $2)) data
  data=$(mktemp -d)
  CALLSIGN_DATA_DIR=$data CALLSIGN_HTTP_ADDR=127.0.0.1:$http CALLSIGN_SMTP_ADDR=127.0.0.1:$((http + 1)) \
    CALLSIGN_IMAP_ADDR=127.0.0.1:0 CALLSIGN_MAIL_DOMAINS=agents.test CALLSIGN_LOG_LEVEL=warn CALLSIGN_RATE_LIMIT=off \
    CALLSIGN_JWT_SECRET=bench-bench-bench-bench-bench-bench CALLSIGN_VAULT_KEY="$VAULT_KEY" \
    CALLSIGN_DATABASE_URL=$(url_with_schema "$schema") "$bin" serve >"$data/log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$http/api/health/ping/" >/dev/null && return
    sleep 0.1
  done
  echo "instance $i of $bin did not start:" >&2; cat "$data/log" >&2; exit 1
}

# account BIN I: an account with 4 inboxes through instance I; sets rcpts.
account() {
  local bin=$1 i=$2 http=$((PORT_BASE + 10 * $2)) key
  key=$(CALLSIGN_DATA_DIR=$(mktemp -d) CALLSIGN_JWT_SECRET=bench-bench-bench-bench-bench-bench CALLSIGN_DATABASE_URL=$(url_with_schema "$schema") CALLSIGN_VAULT_KEY="$VAULT_KEY" "$bin" account create --email "bench$i-$RANDOM@example.com" |
    sed 's/.*"management_key":"\([^"]*\)".*/\1/')
  rcpts=""
  for j in 1 2 3 4; do
    curl -sf -X POST "http://127.0.0.1:$http/api/identities/" -H "Authorization: Bearer $key" \
      -d "name=agent$i$j" -d "email_identifier=agent$i$j" >/dev/null
    rcpts="$rcpts${rcpts:+,}agent$i$j@agents.test"
  done
}

VAULT_KEY=$(head -c 32 /dev/urandom | base64)
for run in $(seq "$RUNS"); do
  "$SMTPLOAD" -sink 127.0.0.1:$((PORT_BASE + 99)) >/dev/null 2>&1 &
  sink=$!
  sleep 0.3
  "$SMTPLOAD" -addr 127.0.0.1:$((PORT_BASE + 99)) -n "$N" -c "$C" -json |
    jq -c --argjson run "$run" '{label: "null sink", run: $run, msgs_per_s: (.smtp.msgs_per_s | floor)}' | tee -a "$out"
  kill -INT "$sink"; wait "$sink" 2>/dev/null || true
  for bin in "$@"; do
    for setup in $INSTANCES; do
      n=${setup%a}
      schema="bench_$(date +%s%N)"
      psql "$CALLSIGN_TEST_POSTGRES_URL" -qc "CREATE SCHEMA $schema" >/dev/null
      pids=()
      for i in $(seq "$n"); do start "$bin" "$i" "$schema"; done
      declare -A to=()
      for i in $(seq "$n"); do
        if [ "$i" = 1 ] || [ "$setup" != "$n" ]; then account "$bin" "$i"; fi
        to[$i]=$rcpts
      done
      results=$(mktemp)
      t0=0
      for p in "${pids[@]}"; do t0=$((t0 + $(awk '{print $14+$15}' "/proc/$p/stat"))); done
      backend_ticks "$schema" >"$results.pg0"
      gens=()
      for i in $(seq "$n"); do
        "$SMTPLOAD" -addr 127.0.0.1:$((PORT_BASE + 10 * i + 1)) -n "$N" -c "$C" -rcpt "${to[$i]}" -json >>"$results" &
        gens+=($!)
      done
      if [ -n "${WAITS:-}" ]; then
        # What the instances' backends are doing, every 100 ms.
        echo "SELECT state || ' ' || coalesce(wait_event_type || ':' || wait_event, 'running') FROM pg_stat_activity
          WHERE application_name = '$schema' \\watch 0.1" | psql "$CALLSIGN_TEST_POSTGRES_URL" -At >"$results.waits" 2>/dev/null &
        sampler=$!
      fi
      wait "${gens[@]}" || true
      if [ -n "${WAITS:-}" ]; then
        kill "$sampler"; wait "$sampler" 2>/dev/null || true
        echo "backend states, $(basename "$bin") x$setup run $run (samples):"
        grep -v '^$' "$results.waits" | sort | uniq -c | sort -rn | head -8
      fi
      t1=0
      for p in "${pids[@]}"; do t1=$((t1 + $(awk '{print $14+$15}' "/proc/$p/stat"))); done
      backend_ticks "$schema" >"$results.pg1"
      pg=$(awk 'NR == FNR { before[$1] = $2; next } { total += $2 - before[$1] } END { print total + 0 }' "$results.pg0" "$results.pg1")
      # The rate of n instances is every message over the longest run; CPU
      # is the servers' (10 ms ticks) per stored message.
      jq -s -c --arg name "$(basename "$bin") x$setup" --argjson run "$run" --argjson ticks $((t1 - t0)) --argjson pg "$pg" '{label: $name, run: $run,
        msgs_per_s: ((map(.smtp.sent) | add) / (map(.smtp.wall_s) | max) | floor), sent: (map(.smtp.sent) | add),
        errors: (map(.smtp.errors) | add), p50_ms: (map(.smtp.lat_ms.p50) | max), p99_ms: (map(.smtp.lat_ms.p99) | max),
        cpu_ms_per_msg: ($ticks * 10 / (map(.smtp.sent) | add)), pg_cpu_ms_per_msg: ($pg * 10 / (map(.smtp.sent) | add))}' "$results" | tee -a "$out"
      for p in "${pids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
      pids=()
      psql "$CALLSIGN_TEST_POSTGRES_URL" -qc "DROP SCHEMA $schema CASCADE" >/dev/null
    done
  done
done

jq -s -r 'group_by(.label) | .[] | "\(.[0].label): median \(map(.msgs_per_s) | sort | .[length / 2 | floor]) msg/s over \(length) runs"' "$out"
