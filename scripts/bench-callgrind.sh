#!/usr/bin/env bash
# Instructions the server runs per received message, counted by valgrind's
# callgrind: unlike CPU time they hardly move with the load of a shared
# machine (two runs of one binary agreed within 0.5%). Kernel time (fsync,
# WAL writes) is not counted, so compare builds with it and confirm with
# scripts/bench-compare.sh.
#
#   scripts/bench-callgrind.sh BIN [BIN...]     # N=1000 by default
#
# Per binary: a fresh SQLite data dir, one account with 4 inboxes, 50
# messages to warm up, counters zeroed, then N messages of about 5 KB over
# 16 connections (smtpload), counters dumped. Prints instructions per
# message. CALLGRIND_DIR=<dir> keeps the counts there for callgrind_annotate
# (build with symbols, without -ldflags '-s -w', to read them).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000}
SMTPLOAD_DIR=${SMTPLOAD_DIR:-$(git rev-parse --path-format=absolute --git-common-dir)/../../shared/tools/smtpload}
mkdir -p bin bench/results
[ -x bin/smtpload ] || (cd "$SMTPLOAD_DIR" && go build -o "$OLDPWD/bin/smtpload" .)

tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export CALLSIGN_JWT_SECRET=bench-bench-bench-bench-bench-bench CALLSIGN_VAULT_KEY=$(head -c 32 /dev/urandom | base64) \
  CALLSIGN_IMAP_ADDR=127.0.0.1:0 CALLSIGN_MAIL_DOMAINS=agents.test CALLSIGN_LOG_LEVEL=warn CALLSIGN_RATE_LIMIT=off \
  CALLSIGN_HTTP_ADDR=127.0.0.1:14301 CALLSIGN_SMTP_ADDR=127.0.0.1:14302

for bin in "$@"; do
  export CALLSIGN_DATA_DIR=$tmp/$RANDOM
  mkdir -p "$CALLSIGN_DATA_DIR"
  out=${CALLGRIND_DIR:-$tmp}/callgrind-$(basename "$bin")
  # Go's asynchronous preemption signals trip callgrind up.
  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$out.%p" "$bin" serve >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 1200); do curl -sf "http://$CALLSIGN_HTTP_ADDR/api/health/ping/" >/dev/null && break; sleep 0.1; done
  key=$("$bin" account create --email "bench-$RANDOM@example.com" | sed 's/.*"management_key":"\([^"]*\)".*/\1/')
  rcpts=""
  for i in 1 2 3 4; do
    curl -sf -X POST "http://$CALLSIGN_HTTP_ADDR/api/identities/" -H "Authorization: Bearer $key" \
      -d "name=agent$i" -d "email_identifier=agent$i" >/dev/null
    rcpts="$rcpts${rcpts:+,}agent$i@agents.test"
  done
  ./bin/smtpload -addr "$CALLSIGN_SMTP_ADDR" -n 50 -c 4 -rcpt "$rcpts" -json >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  ./bin/smtpload -addr "$CALLSIGN_SMTP_ADDR" -n "$N" -c 16 -rcpt "$rcpts" -json >"$tmp/load"
  callgrind_control -d "$pid" >/dev/null 2>&1 # into $out.<pid>.1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  ir=$(grep -h '^totals:' "$out.$pid.1" | awk '{print $2}')
  pid=""
  echo "$bin: $((ir / N)) instructions per message ($N messages, $(jq .smtp.errors "$tmp/load") errors)"
done
