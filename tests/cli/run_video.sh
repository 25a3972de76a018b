#!/usr/bin/env bash
# `qvl run --video FILE`: an MP4 (made here by the ffmpeg program) and an animated GIF become
# video tokens in the prompt (counts as transformers' processor gives them), per-run settings
# change the sampling, and a damaged file is a one-line error with a non-zero exit; video parts
# in a --messages file; `qvl batch --requests` with video parts.
set -euo pipefail
QVL=$1 MODEL=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
ffmpeg -v error -y -f lavfi -i testsrc=size=128x96:rate=10 -t 2 -c:v libx264 -pix_fmt yuv420p \
  "$OUT/clip.mp4"
ffmpeg -v error -y -f lavfi -i testsrc=size=64x64:rate=4 -t 2 "$OUT/clip.gif"
video_tokens() {
  node -e 'const l = require("fs").readFileSync(0, "utf8").trim().split("\n");
           process.stdout.write(String(JSON.parse(l[l.length - 1]).usage.video_tokens));'
}
run() { "$QVL" --log-level warn run -m "$MODEL" --temperature 0 --max-tokens 2 --json "$@"; }
# 20 frames at 10 fps sampled at 2 fps: 4 frames, 2 pairs of 6 x 8 patches = 2 x 12 tokens.
n=$(run --video "$OUT/clip.mp4" "What happens?" | video_tokens)
[ "$n" = 24 ] || { echo "mp4: $n video tokens, expected 24"; exit 1; }
# --video-fps 4: 8 frames, 4 pairs.
n=$(run --video "$OUT/clip.mp4" --video-fps 4 "What happens?" | video_tokens)
[ "$n" = 48 ] || { echo "mp4 at 4 fps: $n video tokens, expected 48"; exit 1; }
# An animated GIF after a picture: 8 frames at 4 fps -> 4 sampled, 64x64 -> 2 pairs of 4 x 4
# patches = 2 x 4 tokens.
n=$(run --image "$MODEL/images/a_v_square_97x61.png" --video "$OUT/clip.gif" "Compare" | video_tokens)
[ "$n" = 8 ] || { echo "gif: $n video tokens, expected 8"; exit 1; }
# Damaged: the first 100 bytes of the MP4.
head -c 100 "$OUT/clip.mp4" > "$OUT/broken.mp4"
if run --video "$OUT/broken.mp4" "What happens?" > "$OUT/broken.out" 2> "$OUT/broken.err"; then
  echo "a damaged video was accepted"; exit 1
fi
grep -q "video 1: " "$OUT/broken.err" || { echo "no clear error:"; cat "$OUT/broken.err"; exit 1; }
[ "$(wc -l < "$OUT/broken.err")" -le 2 ] || { echo "error is not one line:"; cat "$OUT/broken.err"; exit 1; }
# --messages: a video_url by relative path at fps 4 (48 tokens), the GIF as a data URI (8) and a
# frame list of two 64x64 pictures, one by file:// URL (one pair of 4 x 4 patches: 4 tokens).
ffmpeg -v error -y -f lavfi -i testsrc=size=64x64:rate=1 -frames:v 2 "$OUT/frame%d.png"
node -e '
const fs = require("fs"), out = process.argv[1];
const gif = "data:image/gif;base64," + fs.readFileSync(out + "/clip.gif").toString("base64");
fs.writeFileSync(out + "/messages.json", JSON.stringify([{role: "user", content: [
  {type: "video_url", video_url: {url: "clip.mp4", fps: 4}},
  {type: "video_url", video_url: gif},
  {type: "video", video: ["frame1.png", "file://" + out + "/frame2.png"]},
  {type: "text", text: "Compare"}]}]));
fs.writeFileSync(out + "/bad_fps.json", JSON.stringify([{role: "user", content: [
  {type: "video_url", video_url: {url: "clip.mp4", fps: "fast"}}, {type: "text", text: "?"}]}]));
' "$OUT"
n=$(run --messages "$OUT/messages.json" | video_tokens)
[ "$n" = 60 ] || { echo "--messages: $n video tokens, expected 48 + 8 + 4"; exit 1; }
if run --messages "$OUT/bad_fps.json" > /dev/null 2> "$OUT/bad_fps.err"; then
  echo "a video fps that is not a number was accepted"; exit 1
fi
grep -q "video 'fps' must be a number" "$OUT/bad_fps.err" || { cat "$OUT/bad_fps.err"; exit 1; }
# qvl batch over a requests file naming the clip (file://, relative to the file) and a missing one.
cat > "$OUT/requests.jsonl" <<'LINES'
{"custom_id": "clip", "max_tokens": 2, "messages": [{"role": "user", "content": [{"type": "video_url", "video_url": {"url": "file://clip.mp4"}}, {"type": "text", "text": "What happens?"}]}]}
{"custom_id": "missing", "max_tokens": 2, "messages": [{"role": "user", "content": [{"type": "video_url", "video_url": "file://nope.mp4"}, {"type": "text", "text": "?"}]}]}
LINES
"$QVL" --log-level warn batch -m "$MODEL" --requests "$OUT/requests.jsonl" -o "$OUT/batch.jsonl" \
  > /dev/null 2>&1 || true
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const clip = lines.find(l => l.id === "clip"), missing = lines.find(l => l.id === "missing");
if (!clip || clip.error || clip.usage.prompt_tokens_details.video_tokens !== 24)
  throw new Error("batch clip: " + JSON.stringify(clip));
if (!missing || !missing.error || !/nope.mp4/.test(missing.error.message))
  throw new Error("batch missing file: " + JSON.stringify(missing));
' "$OUT/batch.jsonl"
echo OK
