#!/usr/bin/env bash
# The inbound SMTP memory bound (CALLSIGN_SMTP_MAX_INFLIGHT_BYTES), measured
# against the real binary on SQLite: C connections each send one message of
# about ATTACH_KB*4/3 bytes at once (50 of about 20 MB by default), and the
# server's peak RSS (VmHWM) is read from /proc. A message answered 451 is
# sent again, as a sender would retry it, until all are stored; the script
# then checks that the inbox holds every one.
#
#   scripts/bench-smtp-memory.sh
#   C=8 ATTACH_KB=15000 scripts/bench-smtp-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SMTPLOAD_DIR=${SMTPLOAD_DIR:-../shared/tools/smtpload}
C=${C:-50}
ATTACH_KB=${ATTACH_KB:-15000}
HTTP_PORT=${HTTP_PORT:-18081}
SMTP_PORT=${SMTP_PORT:-12527}

mkdir -p bin
(cd "$SMTPLOAD_DIR" && go build -o "$OLDPWD/bin/smtpload" .)
make -s build

data=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$data"; }
trap cleanup EXIT

export CALLSIGN_DATA_DIR=$data CALLSIGN_HTTP_ADDR=127.0.0.1:$HTTP_PORT CALLSIGN_SMTP_ADDR=127.0.0.1:$SMTP_PORT \
  CALLSIGN_IMAP_ADDR=127.0.0.1:0 CALLSIGN_MAIL_DOMAINS=agents.test CALLSIGN_LOG_LEVEL=warn CALLSIGN_RATE_LIMIT=off
unset CALLSIGN_DATABASE_URL
./bin/callsign serve &
server_pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$HTTP_PORT/api/health/ping/" >/dev/null && break
  sleep 0.1
done
KEY=$(./bin/callsign account create --email bench-memory@example.com | sed 's/.*"management_key":"\([^"]*\)".*/\1/')
curl -sf -X POST "http://127.0.0.1:$HTTP_PORT/api/identities/" -H "Authorization: Bearer $KEY" \
  -d name=agent1 -d email_identifier=agent1 >/dev/null
rss() { awk "/$1/{print int(\$2/1024)}" "/proc/$server_pid/status"; }
echo "idle: VmRSS $(rss VmRSS) MiB, VmHWM $(rss VmHWM) MiB"

# Every round sends what is still missing at once; 451s are retried.
left=$C rounds=0 start=$(date +%s.%N)
while [ "$left" -gt 0 ]; do
  rounds=$((rounds + 1))
  line=$(./bin/smtpload -addr "127.0.0.1:$SMTP_PORT" -n "$left" -c "$left" -attach-kb "$ATTACH_KB" -reply-frac 0 \
    -rcpt agent1@agents.test -timeout 10m -run-id "mem$rounds" -json || true)
  sent=$(echo "$line" | jq '.smtp.sent')
  echo "round $rounds: $left sent at once, $sent stored, $(echo "$line" | jq '.smtp.errors') answered otherwise, avg $(echo "$line" | jq '.smtp.avg_msg_bytes') bytes"
  left=$((left - sent))
  [ "$rounds" -ge 20 ] && { echo "giving up after $rounds rounds" >&2; exit 1; }
done
wall=$(echo "$(date +%s.%N) - $start" | bc)

stored=$(curl -sf "http://127.0.0.1:$HTTP_PORT/api/email-messages/?limit=1" -H "Authorization: Bearer $KEY" | jq .count)
echo "stored: $stored of $C, in $rounds rounds, ${wall}s"
echo "peak: VmHWM $(rss VmHWM) MiB (VmRSS now $(rss VmRSS) MiB)"
[ "$stored" = "$C" ]
