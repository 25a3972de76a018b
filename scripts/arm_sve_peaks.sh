#!/usr/bin/env bash
# Prints the table of docs/arm-kernels.md's "SVE and SVE2" section: int8 multiply-adds per cycle
# of NEON and SVE SDOT and SMMLA on the llvm-mca-19 models of the cores with SVE (Neoverse-V1,
# V2, N2, A64FX), from 8 independent instructions of each kind. Static analysis: no hardware.
# The multiply-adds per instruction follow the vector length: 128-bit NEON, and SVE at the
# core's length (V1 256, V2 and N2 128, A64FX 512 bits). Needs llvm-19 (Debian bookworm).
set -euo pipefail
MCA=${LLVM_MCA:-llvm-mca-19}
command -v "$MCA" >/dev/null || { echo "arm_sve_peaks: $MCA not found (apt-get install llvm-19)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# loop NAME REGISTER-FORM: 8 instructions on distinct accumulators.
loop() {
  local i
  for i in 0 1 2 3 4 5 6 7; do printf "$2\n" "$i" $((16 + i % 4)) $((20 + i / 4)); done >"$work/$1.s"
}
loop neon_sdot 'sdot v%d.4s, v%d.16b, v%d.16b'
loop sve_sdot 'sdot z%d.s, z%d.b, z%d.b'
loop neon_smmla 'smmla v%d.4s, v%d.16b, v%d.16b'
loop sve_smmla 'smmla z%d.s, z%d.b, z%d.b'

# macs_per_cycle CORE LOOP MACS-PER-INSTRUCTION: "-" when the model rejects the instruction.
macs_per_cycle() {
  local cycles
  cycles=$("$MCA" -mtriple=aarch64 -mcpu="$1" -mattr=+sve,+sve2,+i8mm,+dotprod -iterations=200 \
             "$work/$2.s" 2>/dev/null | awk '/^Total Cycles:/ {print $3}') || true
  [ -n "$cycles" ] || { echo -; return; }
  awk -v c="$cycles" -v m="$3" 'BEGIN { printf "%.0f", 8 * m * 200 / c }'
}

echo "| core | SVE vector | NEON SDOT | SVE SDOT | NEON SMMLA | SVE SMMLA |"
echo "|---|---|---|---|---|---|"
# core:SVE bits:whether the chip has NEON dot product and I8MM (A64FX has neither; its model
# would time them anyway)
for entry in neoverse-v1:256:1 neoverse-v2:128:1 neoverse-n2:128:1 a64fx:512:0; do
  IFS=: read -r core bits neon <<<"$entry"
  lanes=$((bits / 32))
  neon_sdot="not on the chip" neon_smmla="not on the chip"
  if [ "$neon" = 1 ]; then
    neon_sdot=$(macs_per_cycle "$core" neon_sdot 16)
    neon_smmla=$(macs_per_cycle "$core" neon_smmla 32)
  fi
  echo "| $core | $bits bits | $neon_sdot | $(macs_per_cycle "$core" sve_sdot $((lanes * 4))) | $neon_smmla | $(macs_per_cycle "$core" sve_smmla $((lanes * 8))) |"
done
