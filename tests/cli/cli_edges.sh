#!/usr/bin/env bash
# Command-line edges a careless or hostile caller hits: absurd --threads, an unwritable stdout, a
# FIFO as an image, model folders that are missing, unreadable or hold absurd config values. Each
# must end quickly with a clear error and a failing exit code, never a hang, a crash or exit 0.
set -euo pipefail
QVL=$1 MODEL=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
IMAGE="$MODEL/images/a_ii_shapes_200x120.png"

expect_error() {
  local pattern=$1; shift
  set +e; msg=$(timeout 60 "$@" 2>&1 </dev/null); rc=$?; set -e
  if [ $rc -eq 0 ] || [ $rc -ge 124 ] || ! grep -qi -- "$pattern" <<<"$msg"; then
    echo "expected a clear error matching '$pattern' from: $* (rc=$rc): $msg"; exit 1
  fi
}

# --threads is bounded everywhere (100000 used to exhaust the process limit; -3 was accepted).
for t in 100000 -3; do
  expect_error "threads" "$QVL" run -m "$MODEL" --threads "$t" --max-tokens 1 "hi"
  expect_error "threads" "$QVL" serve -m "$MODEL" --threads "$t" --port 0
  expect_error "threads" "$QVL" bench -m "$MODEL" --threads "$t" --probe-only
done

# An answer that cannot be written is a failure (it used to exit 0 with > /dev/full).
if [ -w /dev/full ]; then
  for mode in --json ""; do
    set +e
    msg=$(timeout 60 "$QVL" --log-level warn run -m "$MODEL" --temperature 0 --max-tokens 4 \
          --ignore-eos $mode "hi" 2>&1 >/dev/full); rc=$?
    set -e
    if [ $rc -ne 1 ] || ! grep -q "cannot write to standard output" <<<"$msg"; then
      echo "run ${mode:-streaming} > /dev/full: rc=$rc: $msg"; exit 1
    fi
  done
else
  echo "skipped: /dev/full is not writable here"
fi

# A FIFO given as an image is refused at once (it used to wait for a writer for ever).
mkfifo "$OUT/pipe.png"
expect_error "not a regular file" "$QVL" run -m "$MODEL" --max-tokens 1 --image "$OUT/pipe.png" "hi"
expect_error "not a regular file" "$QVL" run -m "$MODEL" --max-tokens 1 --image "$OUT" "hi"

# Model folders: each problem is named (it used to say "no config.json" for all of them).
expect_error "neither an existing local file or folder" "$QVL" run -m "$OUT/nowhere" "hi"
mkdir -p "$OUT/empty" "$OUT/dir_config/config.json"
expect_error "no config.json" "$QVL" run -m "$OUT/empty" "hi"
expect_error "is not a file" "$QVL" run -m "$OUT/dir_config" "hi"
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$OUT/locked" && cp "$MODEL/config.json" "$OUT/locked/" && chmod 000 "$OUT/locked"
  expect_error "permission denied" "$QVL" run -m "$OUT/locked" "hi"
  chmod 700 "$OUT/locked"
else
  echo "skipped: permission checks (running as root, which reads everything)"
fi

# Absurd config values are refused with the field named, before any allocation.
for edit in 'c.text_config.rms_norm_eps=-1e-6' 'c.image_token_id=1e12' \
            'c.text_config.max_position_embeddings=1e12'; do
  rm -rf "$OUT/absurd" && mkdir -p "$OUT/absurd"
  for f in "$MODEL"/*; do ln -s "$f" "$OUT/absurd/"; done
  rm "$OUT/absurd/config.json"
  node -e "const fs=require('fs'); const c=JSON.parse(fs.readFileSync(process.argv[1]));
           $edit; fs.writeFileSync(process.argv[2], JSON.stringify(c));" \
    "$MODEL/config.json" "$OUT/absurd/config.json"
  field=$(sed -E 's/.*\.([a-z_]+)=.*/\1/' <<<"$edit")
  expect_error "$field" "$QVL" run -m "$OUT/absurd" --max-tokens 1 "hi"
done

# JSON nested past the documented 64 levels is refused while reading, in one line (a million
# levels used to crash both: the tree was copied and printed recursively).
deep=$(head -c 1000000 /dev/zero | tr '\0' '[') closing=$(head -c 1000000 /dev/zero | tr '\0' ']')
printf '[{"role": "user", "content": %s%s}]' "$deep" "$closing" >"$OUT/deep_messages.json"
expect_error "nested deeper than 64 levels" "$QVL" run -m "$MODEL" --messages "$OUT/deep_messages.json"
printf '{"id": "deep", "messages": %s%s}\n' "$deep" "$closing" >"$OUT/deep_requests.jsonl"
set +e
timeout 60 "$QVL" --log-level warn batch -m "$MODEL" --requests "$OUT/deep_requests.jsonl" \
  -o "$OUT/deep_results.jsonl" >/dev/null 2>&1 </dev/null; rc=$?
set -e
if [ $rc -ne 2 ] || ! grep -q "nested deeper than 64 levels" "$OUT/deep_results.jsonl"; then
  echo "batch --requests with a deep line: rc=$rc: $(head -c 300 "$OUT/deep_results.jsonl")"; exit 1
fi
echo "cli edges: all refused clearly"
