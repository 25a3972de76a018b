#!/bin/sh
# Container entry point: `qvl serve` with flags from QVL_* environment variables; arguments
# given to the container are appended (e.g. `--quant q4 --alias qwen`). exec keeps qvl as the
# process that receives SIGTERM, so in-flight requests get --shutdown-grace to finish.
# QVL_API_KEY is read by qvl itself (not put on the command line, where `ps` would show it).
set -eu
offline=
case "${QVL_OFFLINE:-0}" in 1 | true | yes) offline=--offline ;; esac
exec /usr/local/bin/qvl serve \
  --model "${QVL_MODEL}" \
  --host "${QVL_HOST:-0.0.0.0}" \
  --port "${QVL_PORT:-8080}" \
  --threads "${QVL_THREADS:-0}" \
  --parallel "${QVL_PARALLEL:-8}" \
  --queue "${QVL_QUEUE:-8}" \
  --kv-cache-mb "${QVL_KV_CACHE_MB:-0}" \
  --image-cache-mb "${QVL_IMAGE_CACHE_MB:-0}" \
  --max-body-mb "${QVL_MAX_BODY_MB:-32}" \
  --timeout "${QVL_TIMEOUT:-600}" \
  --shutdown-grace "${QVL_SHUTDOWN_GRACE:-20}" \
  ${QVL_QUANT:+--quant "$QVL_QUANT"} \
  ${QVL_ALIAS:+--alias "$QVL_ALIAS"} \
  ${offline} \
  "$@"
