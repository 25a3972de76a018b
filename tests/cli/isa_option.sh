#!/usr/bin/env bash
# qvl --isa: every command runs at the chosen kernel level (an AVX-512 machine reproduces what an
# AVX2-only one runs), the report names the level and the int8 GEMM kernel, a level the CPU cannot
# run is a clear error, and an answer at a lower level is still the model's answer.
set -euo pipefail
QVL=$1 MODEL=$2
probe() {
  "$QVL" --log-level warn --isa "$1" bench --probe-only --probe-seconds 0.02 --json | tail -1
}
expect_error() {
  local pattern=$1; shift
  set +e; msg=$(timeout 60 "$@" 2>&1 </dev/null); rc=$?; set -e
  if [ $rc -eq 0 ] || [ $rc -ge 124 ] || ! grep -qi -- "$pattern" <<<"$msg"; then
    echo "expected an error matching '$pattern' from: $* (rc=$rc): $msg"; exit 1
  fi
}
check() {  # check JSON "isa" "int8_gemm_kernel" "int8_instruction"
  node -e '
const m = JSON.parse(process.argv[1]);
const [isa, kernel, instruction] = process.argv.slice(2);
if (m.isa !== isa || m.int8_gemm_kernel !== kernel || m.int8_instruction !== instruction)
  throw new Error("expected " + process.argv.slice(2).join(" ") + ": " + process.argv[1]);
' "$@"
}
expect_error "not in" "$QVL" --isa avx3 bench --probe-only
auto=$(probe auto)
best=$(node -e 'console.log(JSON.parse(process.argv[1]).isa)' "$auto")
has_vnni=$(grep -qw avx_vnni /proc/cpuinfo && echo 1 || echo 0)
arch=$(node -e 'console.log(JSON.parse(process.argv[1]).arch)' "$auto")
check "$(probe scalar)" scalar none scalar
levels=(scalar)  # the levels this CPU runs, lowest first
if [ "$arch" = aarch64 ]; then
  declare -A kernel=([neon]=neon-smull [dotprod]=neon-dotprod [i8mm]=neon-i8mm)
  declare -A instruction=([neon]=smull+smlal2+sadalp [dotprod]=sdot [i8mm]=usmmla)
  expect_error "cannot run" "$QVL" --isa avx2 bench --probe-only
  above_best=$([ "$best" = scalar ] && echo 1 || echo 0)
  for isa in neon dotprod i8mm; do
    if [ "$above_best" = 1 ]; then
      expect_error "cannot run" "$QVL" --isa $isa bench --probe-only
      continue
    fi
    check "$(probe $isa)" $isa "${kernel[$isa]}" "${instruction[$isa]}"
    levels+=("$isa")
    if [ "$isa" = "$best" ]; then
      check "$auto" $isa "${kernel[$isa]}" "${instruction[$isa]}"
      above_best=1
    fi
  done
elif [ "$arch" = x86-64 ]; then
  if [ "$best" = scalar ]; then
    expect_error "cannot run" "$QVL" --isa avx2 bench --probe-only
  else
    levels+=(avx2)
    check "$(probe avx2)" avx2 avx2 "vpmaddubsw+vpmaddwd ymm"
    if [ "$has_vnni" = 1 ]; then
      check "$(probe avx-vnni)" avx2 avx-vnni "vpmaddubsw+vpmaddwd ymm"
      [ "$best" = avx2 ] && check "$auto" avx2 avx-vnni "vpmaddubsw+vpmaddwd ymm"
    else
      expect_error "no AVX-VNNI" "$QVL" --isa avx-vnni bench --probe-only
      [ "$best" = avx2 ] && check "$auto" avx2 avx2 "vpmaddubsw+vpmaddwd ymm"
    fi
  fi
  if [ "$best" = avx512 ]; then
    levels+=(avx512)
    check "$(probe avx512)" avx512 avx512-vnni "vpdpbusd zmm"
    check "$auto" avx512 avx512-vnni "vpdpbusd zmm"
  else
    expect_error "cannot run" "$QVL" --isa avx512 bench --probe-only
  fi
else
  [ "$best" = scalar ] || { echo "$arch: best level $best, expected scalar"; exit 1; }
  expect_error "cannot run" "$QVL" --isa avx2 bench --probe-only
  expect_error "cannot run" "$QVL" --isa neon bench --probe-only
fi
# The same greedy answer at every level the CPU runs (the tiny model's q8 and exact paths).
for quant in exact q8; do
  want=""
  for isa in "${levels[@]}"; do
    got=$("$QVL" --log-level warn --isa $isa run -m "$MODEL" --quant $quant --temperature 0 \
          --max-tokens 12 --ignore-eos --json "Describe a red square." | tail -1 |
          node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
            const r=JSON.parse(s); if (r.completion_ids.length !== 12) throw new Error(s);
            console.log(r.completion_ids.join(","))})')
    if [ -z "$want" ]; then want=$got
    elif [ "$got" != "$want" ]; then echo "$quant at $isa: $got, not $want"; exit 1; fi
  done
done
echo OK
