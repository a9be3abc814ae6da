#!/usr/bin/env bash
# This checkout against a reference commit, side by side: both built into a
# temp dir, then interleaved A/B rounds of SMTP ingest (smtpload, 5 KB
# messages) on SQLite and, when CALLSIGN_TEST_POSTGRES_URL is set, on
# PostgreSQL, each round with the generator's null sink measured first. The
# machine is shared, so only ratios within one round count: it prints
# this/ref per metric with min/median/max over the rounds.
#
#   make bench-compare REF=623ae0a
#   REF=623ae0a ROUNDS=5 N=4000 C=16 DIALECTS=postgres scripts/bench-compare.sh
#   BIN=bin/callsign REF_BIN=/tmp/old scripts/bench-compare.sh   # prebuilt binaries
#
# Per run: a fresh data dir (and a fresh schema on PostgreSQL), one account
# with 4 inboxes, then N messages over C connections. Recorded: messages/s,
# the server's CPU per message (/proc/<pid>/stat utime+stime), the
# PostgreSQL backends' CPU per message (those whose application_name is the
# run's schema, as scripts/bench-pg.sh), the server's peak RSS (VmHWM) and
# disk per message (the data dir; on PostgreSQL the schema's relations),
# right after the load and again at rest, REST_WAIT seconds later (1 by
# default), when an idle SQLite server has emptied its WAL: the log is a
# bounded working space (walRestartAt), not part of what a message keeps.
# Result lines (JSON) go to bench/results/<date>-compare.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."

REF=${REF:-}
ROUNDS=${ROUNDS:-3}
N=${N:-3000}
C=${C:-16}
BODY_KB=${BODY_KB:-4} # 4 KiB of text and HTML: about 5 KB on the wire
PORT_BASE=${PORT_BASE:-14000}
REST_WAIT=${REST_WAIT:-1}
DIALECTS=${DIALECTS:-sqlite${CALLSIGN_TEST_POSTGRES_URL:+ postgres}}
# The load generator sits beside the main checkout (worktrees share its .git).
SMTPLOAD_DIR=${SMTPLOAD_DIR:-$(git rev-parse --path-format=absolute --git-common-dir)/../../shared/tools/smtpload}

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p bin bench/results
[ -x bin/smtpload ] || (cd "$SMTPLOAD_DIR" && go build -o "$OLDPWD/bin/smtpload" .)
build() { # build DIR OUT
  (cd "$1" && CGO_ENABLED=0 go build -tags nomsgpack -ldflags '-s -w' -o "$2" ./cmd/callsign)
}
if [ -z "${BIN:-}" ]; then
  BIN=$tmp/callsign-this
  echo "building this checkout ($(git describe --always --dirty))…" >&2
  build . "$BIN"
fi
if [ -z "${REF_BIN:-}" ]; then
  [ -n "$REF" ] || { echo "set REF=<commit> (or REF_BIN=<binary>)" >&2; exit 2; }
  REF_BIN=$tmp/callsign-ref
  mkdir "$tmp/ref"
  git archive "$REF" | tar -x -C "$tmp/ref"
  echo "building $REF…" >&2
  build "$tmp/ref" "$REF_BIN"
fi
# Both run from copies, as installed binaries do: run from the file the
# linker has just written (through mmap), a server had 3 MiB more of its
# binary resident (RssFile 40 against 37 MB) than from a copy of it or from
# the same file read back from disk (its page cache dropped first).
ref_label=${REF:-$REF_BIN}
install -m 0755 "$BIN" "$tmp/run-this" && BIN=$tmp/run-this
install -m 0755 "$REF_BIN" "$tmp/run-ref" && REF_BIN=$tmp/run-ref
out="bench/results/$(date -u +%Y-%m-%dT%H%M%S)-compare.jsonl" # seconds: runs back to back
: >"$out"

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

# The schema doubles as application_name, so the backends serving a run
# can be found (and only they counted).
url_with_schema() {
  case "$CALLSIGN_TEST_POSTGRES_URL" in
    *\?*) echo "$CALLSIGN_TEST_POSTGRES_URL&search_path=$1&application_name=$1" ;;
    *) echo "$CALLSIGN_TEST_POSTGRES_URL?search_path=$1&application_name=$1" ;;
  esac
}
backend_ticks() { # "pid ticks" of each backend serving SCHEMA
  for p in $(psql "$CALLSIGN_TEST_POSTGRES_URL" -Atc "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'"); do
    [ -r "/proc/$p/stat" ] && echo "$p $(ticks "$p")"
  done
  true
}

VAULT_KEY=$(head -c 32 /dev/urandom | base64)
export CALLSIGN_JWT_SECRET=bench-bench-bench-bench-bench-bench CALLSIGN_VAULT_KEY=$VAULT_KEY \
  CALLSIGN_IMAP_ADDR=127.0.0.1:0 CALLSIGN_MAIL_DOMAINS=agents.test CALLSIGN_LOG_LEVEL=warn CALLSIGN_RATE_LIMIT=off

# run NAME BIN DIALECT ROUND: one fresh server, one smtpload run, one line.
run() {
  local name=$1 bin=$2 dialect=$3 round=$4 http=$((PORT_BASE + 1)) smtp=$((PORT_BASE + 2)) data schema="" key rcpts=""
  data=$(mktemp -d -p "$tmp")
  export CALLSIGN_DATA_DIR=$data CALLSIGN_HTTP_ADDR=127.0.0.1:$http CALLSIGN_SMTP_ADDR=127.0.0.1:$smtp
  unset CALLSIGN_DATABASE_URL
  if [ "$dialect" = postgres ]; then
    schema="bench_cmp_$(date +%s%N)"
    psql "$CALLSIGN_TEST_POSTGRES_URL" -qc "CREATE SCHEMA $schema" >/dev/null
    export CALLSIGN_DATABASE_URL
    CALLSIGN_DATABASE_URL=$(url_with_schema "$schema")
  fi
  "$bin" serve >"$data.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do
    curl -sf "http://$CALLSIGN_HTTP_ADDR/api/health/ping/" >/dev/null && break
    sleep 0.1
  done
  key=$("$bin" account create --email "bench-$RANDOM@example.com" | sed 's/.*"management_key":"\([^"]*\)".*/\1/')
  for i in 1 2 3 4; do
    curl -sf -X POST "http://$CALLSIGN_HTTP_ADDR/api/identities/" -H "Authorization: Bearer $key" \
      -d "name=agent$i" -d "email_identifier=agent$i" >/dev/null
    rcpts="$rcpts${rcpts:+,}agent$i@agents.test"
  done
  local t0 t1 pg=0 line hwm disk_kb rest_kb
  t0=$(ticks "$server_pid")
  [ -n "$schema" ] && backend_ticks "$schema" >"$data.pg0"
  line=$(./bin/smtpload -addr "$CALLSIGN_SMTP_ADDR" -n "$N" -c "$C" -body-kb "$BODY_KB" -rcpt "$rcpts" -json)
  t1=$(ticks "$server_pid")
  hwm=$(awk '/VmHWM/{print $2}' "/proc/$server_pid/status")
  if [ -n "$schema" ]; then
    backend_ticks "$schema" >"$data.pg1"
    pg=$(awk 'NR == FNR { before[$1] = $2; next } { total += $2 - before[$1] } END { print total + 0 }' "$data.pg0" "$data.pg1")
    disk_kb=$(psql "$CALLSIGN_TEST_POSTGRES_URL" -Atc "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) / 1024
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '$schema' AND c.relkind IN ('r', 'm')")
    rest_kb=$disk_kb
  else
    disk_kb=$(du -sk "$data" | cut -f1)
    sleep "$REST_WAIT"
    rest_kb=$(du -sk "$data" | cut -f1)
  fi
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
  [ -n "$schema" ] && psql "$CALLSIGN_TEST_POSTGRES_URL" -qc "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE" >/dev/null
  rm -rf "$data"
  echo "$line" | jq -c --arg bin "$name" --arg db "$dialect" --argjson round "$round" --argjson cpu $((t1 - t0)) \
    --argjson pg "$pg" --argjson hwm "$hwm" --argjson disk "$disk_kb" --argjson rest "$rest_kb" '{bin: $bin, db: $db, round: $round,
      msgs_per_s: .smtp.msgs_per_s, sent: .smtp.sent, errors: .smtp.errors, p99_ms: .smtp.lat_ms.p99,
      cpu_ms_per_msg: ($cpu * 10 / .smtp.sent), pg_cpu_ms_per_msg: ($pg * 10 / .smtp.sent),
      rss_mib: ($hwm / 1024), disk_kb_per_msg: ($disk / .smtp.sent), disk_rest_kb_per_msg: ($rest / .smtp.sent)}' | tee -a "$out"
}

sink() { # the generator against its null sink: the ceiling of any server
  local round=$1
  ./bin/smtpload -sink "127.0.0.1:$((PORT_BASE + 9))" >/dev/null 2>&1 &
  local pid=$!
  sleep 0.3
  ./bin/smtpload -addr "127.0.0.1:$((PORT_BASE + 9))" -n "$N" -c "$C" -body-kb "$BODY_KB" -json |
    jq -c --argjson round "$round" '{bin: "sink", round: $round, msgs_per_s: .smtp.msgs_per_s}' | tee -a "$out"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
}

for round in $(seq "$ROUNDS"); do
  sink "$round"
  for dialect in $DIALECTS; do
    # Alternate which goes first, so neither always meets a warmer cache.
    if [ $((round % 2)) = 1 ]; then order="this ref"; else order="ref this"; fi
    for name in $order; do
      if [ "$name" = this ]; then run this "$BIN" "$dialect" "$round"; else run ref "$REF_BIN" "$dialect" "$round"; fi
    done
  done
done

# this/ref per round and metric, then min/median/max over the rounds.
echo
echo "this ($(git describe --always --dirty)) / ref ($ref_label), $ROUNDS rounds, N=$N c=$C; results: $out"
jq -s -r '
  def stats: sort | "\(.[0] * 100 | round / 100)  \(.[length / 2 | floor] * 100 | round / 100)  \(.[-1] * 100 | round / 100)";
  (map(select(.bin == "sink") | .msgs_per_s) | "null sink msg/s (min median max): \(stats)"),
  (map(select(.bin != "sink")) | group_by(.db)[] | . as $runs | $runs[0].db as $db |
    (group_by(.round) | map(select(length == 2) | (map(select(.bin == "this"))[0]) as $a | (map(select(.bin == "ref"))[0]) as $b |
      {rate: ($a.msgs_per_s / $b.msgs_per_s), cpu: ($a.cpu_ms_per_msg / $b.cpu_ms_per_msg),
       pg: (if $b.pg_cpu_ms_per_msg > 0 then $a.pg_cpu_ms_per_msg / $b.pg_cpu_ms_per_msg else null end),
       both: (($a.cpu_ms_per_msg + $a.pg_cpu_ms_per_msg) / ($b.cpu_ms_per_msg + $b.pg_cpu_ms_per_msg)),
       rss: ($a.rss_mib / $b.rss_mib), disk: ($a.disk_kb_per_msg / $b.disk_kb_per_msg),
       rest: ($a.disk_rest_kb_per_msg / $b.disk_rest_kb_per_msg)})) as $r |
    "\n\($db): this/ref (min median max)",
    "  msgs/s             \($r | map(.rate) | stats)",
    "  server CPU/msg     \($r | map(.cpu) | stats)",
    (if $db == "postgres" then "  database CPU/msg   \($r | map(.pg) | stats)", "  server+db CPU/msg  \($r | map(.both) | stats)" else empty end),
    "  peak RSS           \($r | map(.rss) | stats)",
    "  disk/msg           \($r | map(.disk) | stats)",
    "  disk/msg at rest   \($r | map(.rest) | stats)",
    ($runs | group_by(.bin)[] | "  \(.[0].bin): msgs/s \(map(.msgs_per_s) | stats); CPU ms/msg \(map(.cpu_ms_per_msg) | stats)" +
      (if $db == "postgres" then "; db CPU ms/msg \(map(.pg_cpu_ms_per_msg) | stats)" else "" end) +
      "; RSS MiB \(map(.rss_mib) | stats); disk KB/msg \(map(.disk_kb_per_msg) | stats), at rest \(map(.disk_rest_kb_per_msg) | stats)"))' "$out"
