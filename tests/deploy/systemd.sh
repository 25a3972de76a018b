#!/usr/bin/env bash
# systemd unit test: `systemd-analyze verify` must accept deploy/systemd/qvl.service without a
# word, its sandbox must score as well exposed as it does now (`security --offline`), the stop
# timeout must exceed the grace period, and its ExecStart line, expanded with the unit's own
# defaults (model and port swapped for the tiny test model and a free port), must start a server
# that answers /health and stops with exit 0 on SIGTERM. The sandbox itself needs systemd as
# PID 1 and is not started here.
# Usage: systemd.sh QVL_BINARY MODEL_DIR WORK_DIR. Exit 77 = skipped (reason printed).
set -euo pipefail
qvl_bin=$1 model=$2 work=$3
unit_src=$(cd "$(dirname "$0")/../.." && pwd)/deploy/systemd/qvl.service
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is not installed"; exit 77; }
mkdir -p "$work"
unit=$work/qvl.service
sed "s#/usr/local/bin/qvl#$qvl_bin#" "$unit_src" >"$unit"

out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out"; echo "FAIL: verify"; exit 1; }
[ -z "$out" ] || { echo "$out"; echo "FAIL: verify printed warnings"; exit 1; }
echo "systemd-analyze verify: clean"
exposure=$(systemd-analyze security --offline=true "$unit" 2>&1 | grep 'Overall exposure' || true)
echo "$exposure"
systemd-analyze security --offline=true --threshold=20 "$unit" >/dev/null 2>&1 ||
  { echo "FAIL: exposure above 2.0"; exit 1; }

# The unit's defaults, as systemd would set them, with the test's model and port.
declare -A env
while read -r assignment; do
  for kv in $assignment; do env[${kv%%=*}]=${kv#*=}; done
done < <(sed -n 's/^Environment=//p' "$unit")
env[QVL_MODEL]=$model env[QVL_PORT]=0 env[QVL_THREADS]=1
grace=${env[QVL_SHUTDOWN_GRACE]}
stop=$(sed -n 's/^TimeoutStopSec=//p' "$unit")
((stop > grace)) || { echo "FAIL: TimeoutStopSec=$stop is not above the grace of $grace s"; exit 1; }

cmd=$(awk '/^ExecStart=/ { on = 1; sub(/^ExecStart=/, "") }
           on { line = $0; cont = sub(/\\$/, "", line); printf "%s ", line; if (!cont) exit }' "$unit")
for key in "${!env[@]}"; do cmd=${cmd//"\${$key}"/${env[$key]}}; done
[[ $cmd != *'${'* ]] || { echo "FAIL: unexpanded variable in: $cmd"; exit 1; }
echo "ExecStart: $cmd"
read -r -a argv <<<"$cmd"
coproc server { exec "${argv[@]}" 2>"$work/serve.log"; }
pid=$server_PID
trap 'kill "$pid" 2>/dev/null || true' EXIT
port=
while read -r -t 60 line <&"${server[0]}"; do
  [[ $line =~ listening\ on\ http://[^:]+:([0-9]+) ]] && { port=${BASH_REMATCH[1]}; break; }
done
[ -n "$port" ] || { cat "$work/serve.log"; echo "FAIL: the ExecStart command did not start"; exit 1; }
for _ in $(seq 600); do
  [ "$(curl -s "http://127.0.0.1:$port/health")" = '{"status":"ok"}' ] && break
  sleep 0.1
done
[ "$(curl -s "http://127.0.0.1:$port/health")" = '{"status":"ok"}' ] || { echo "FAIL: /health"; exit 1; }
kill -TERM "$pid"
code=0
wait "$pid" || code=$?
[ "$code" = 0 ] || { cat "$work/serve.log"; echo "FAIL: exit code $code after SIGTERM"; exit 1; }
echo "ExecStart served /health on port $port and stopped with exit 0"
echo PASS
