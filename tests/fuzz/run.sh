#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a bounded time each, from the committed seeds
# (tests/fuzz/corpus/<target>/) plus seeds made at run time (binary formats, test images).
# Any crash, sanitizer report, leak, timeout or out-of-memory fails the run; the input that did it
# is kept in BUILD/fuzz/artifacts/.
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET (default 20)] [TESTDATA_DIR]
# FUZZ_TARGETS="tokenizer json_schema" runs only those (default: all).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
seconds=${2:-20}
testdata=${3:-$here/../../../shared/testdata}
work=$build/fuzz
rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts" "$work/tmp"

"$build/tests/fuzz/fuzz_seeds" "$work/corpus" "$testdata/qwen3-tokenizer/tokenizer.json"
cp -r "$here"/corpus/* "$work/corpus/"
mkdir -p "$work/corpus/decode"
for image in "$testdata"/qwen3vl-tiny-a/images/a_v_square_97x61.png \
             "$testdata"/qwen3vl-tiny-a/images/a_ii_shapes_200x120.png \
             "$testdata"/qwen3vl-tiny-a/images/a_iii_scene_640x480.jpg; do
  [ -f "$image" ] && cp "$image" "$work/corpus/decode/"
done
# Video seeds: one tiny clip per container/codec family, made by the ffmpeg program (a test
# package from scripts/setup.sh); without it the video target starts from an empty corpus.
mkdir -p "$work/corpus/video"
if command -v ffmpeg >/dev/null 2>&1; then
  source_clip="-f lavfi -i testsrc=s=32x24:r=4:d=1"
  for seed in "h264.mp4|-c:v libx264 -preset veryfast -bf 2 -g 2 -pix_fmt yuv420p" \
              "vp9.webm|-c:v libvpx-vp9 -deadline realtime -cpu-used 8" \
              "vp8.mkv|-c:v libvpx" "av1.mkv|-c:v libaom-av1 -cpu-used 8" \
              "clip.gif|-c:v gif" "clip.webp|-c:v libwebp_anim -loop 0" \
              "clip.mov|-c:v mpeg4"; do
    ffmpeg -hide_banner -loglevel error -nostdin -y $source_clip ${seed#*|} \
      "$work/corpus/video/${seed%%|*}" || echo "run.sh: could not make the video seed ${seed%%|*}"
  done
fi

failed=()
# Every tests/fuzz/<name>_fuzz.cpp is the target fuzz_<name>.
all_targets=$(for source in "$here"/*_fuzz.cpp; do basename "$source" _fuzz.cpp; done)
for target in ${FUZZ_TARGETS:-$all_targets}; do
  mkdir -p "$work/corpus/$target"
  start=$SECONDS
  if TMPDIR=$work/tmp ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/$target-" "$work/corpus/$target" \
      >"$work/$target.log" 2>&1; then
    echo "fuzz_$target: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/$target.log" |
                           grep -o '[0-9]*$') runs in $((SECONDS - start)) s, nothing found"
  else
    echo "fuzz_$target FAILED (log: $work/$target.log):"
    grep -E "ERROR|SUMMARY|runtime error|deadly signal|Test unit written" "$work/$target.log" | head -20
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found problems in: ${failed[*]}"
  exit 1
fi
