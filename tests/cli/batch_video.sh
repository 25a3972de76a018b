#!/usr/bin/env bash
# `qvl batch` over a folder of videos (made here by the ffmpeg program) next to a picture: one
# line per file with the answer and the video tokens, --video-fps applied to every video, a
# damaged clip is its own line's error, files without a known extension are ignored, and a
# second run resumes (every file has its line).
set -euo pipefail
QVL=$1 MODEL=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT/in"
ffmpeg -v error -y -f lavfi -i testsrc=size=128x96:rate=10 -t 2 -c:v libx264 -pix_fmt yuv420p \
  "$OUT/in/a.mp4"
ffmpeg -v error -y -f lavfi -i testsrc=size=64x64:rate=8 -t 1 -c:v libvpx "$OUT/in/b.webm"
head -c 100 "$OUT/in/a.mp4" > "$OUT/in/c_broken.MOV"
cp "$MODEL/images/a_v_square_97x61.png" "$OUT/in/d.png"
echo notes > "$OUT/in/notes.txt"
batch() {
  "$QVL" --log-level warn batch -m "$MODEL" "$OUT/in" --preset describe --video-fps 4 \
    --max-tokens 2 --temperature 0 -o "$OUT/out.jsonl"
}
rc=0
batch 2> "$OUT/first.err" || rc=$?
[ "$rc" = 2 ] || { echo "exit $rc, expected 2 (one input failed)"; cat "$OUT/first.err"; exit 1; }
grep -q "ignoring 1 files" "$OUT/first.err" || { echo "notes.txt not ignored:"; cat "$OUT/first.err"; exit 1; }
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const by = (name) => lines.find((l) => l.id.endsWith(name));
const fail = (what) => { throw new Error(what + ": " + JSON.stringify(lines)); };
if (lines.length !== 4) fail("4 lines expected");
// 20 frames at 10 fps sampled at 4 fps: 8 frames, 4 pairs of 6 x 8 patches = 4 x 12 tokens.
const a = by("a.mp4");
if (a.error || typeof a.answer !== "string" || a.usage.prompt_tokens_details.video_tokens !== 48)
  fail("a.mp4");
// 8 frames at 8 fps sampled at 4 fps: 4 frames, 64x64 -> 2 pairs of 4 x 4 patches = 2 x 4 tokens.
if (by("b.webm").usage.prompt_tokens_details.video_tokens !== 8) fail("b.webm");
const broken = by("c_broken.MOV");
if (!broken.error || !/video 1: /.test(broken.error.message)) fail("c_broken.MOV");
const picture = by("d.png");
if (picture.error || picture.usage.prompt_tokens_details?.video_tokens) fail("d.png");
' "$OUT/out.jsonl"
# Resumed: every file has its line already (the damaged one's error too).
batch 2> "$OUT/second.err"
grep -q "done 0, failed 0, skipped 4" "$OUT/second.err" || { echo "resume:"; cat "$OUT/second.err"; exit 1; }
echo OK
