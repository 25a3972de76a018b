#!/usr/bin/env python3
"""Static timing of qvl's aarch64 inner loops, and of llama.cpp's peers, with llvm-mca.

Called by scripts/arm_mca.sh (which installs the tools and finds the llama.cpp source); see
there for usage. Python 3 standard library only.

What it does, for every loop named in OURS and PEERS below:
  1. compiles the loop's source file to assembly (-S) with the Debian cross compiler and the
     flags the build uses (qvl: CMake Release flags and the per-file -march of
     cmake/QvlArch.cmake; llama.cpp: the flags of ggml's CMake for the ARM variant named);
  2. finds the loop in that assembly: the functions whose (demangled) name matches, their control
     flow graph, its natural loops (a back edge u -> h where h dominates u), and among them the
     loop the spec selects (the innermost loop with the most, or the fewest, of a counted kind of
     instruction such as SDOT); nothing depends on line numbers;
  3. runs llvm-mca on the loop's body (its basic blocks in address order) for each core model;
  4. writes the Markdown report.
"""
import argparse
import os
import re
import subprocess
import sys

# ---------------------------------------------------------------------------------------------
# Cores (llvm-mca -mcpu) and what they stand for.
CPUS = [
    ("neoverse-n1", "N1 (= A76)"),
    ("neoverse-n2", "N2"),
    ("neoverse-v1", "V1"),
    ("neoverse-v2", "V2"),
    ("apple-m2", "Apple M2"),
]
# Cores without dotprod (the `neon` level), for the SMULL tile and its peers (specs with neon=True).
NEON_CPUS = [
    ("cortex-a53", "A53 (Pi 3)"),
    ("cortex-a55", "A55"),
    ("cortex-a72", "A72 (Pi 4; A57 model)"),
    ("a64fx", "A64FX"),
]

# ---------------------------------------------------------------------------------------------
# Our loops. file: under the qvl root; funcs: regexes on demangled function names, tried in order
# (the first function with a matching loop wins); key: the counted instruction kind that selects
# the loop (see count()); pick: 'max' (the loop with the most of key, innermost on ties), 'min'
# (the fewest, > 0), 'max-first' / 'max-last' (the first / last in address order of the
# innermost loops with the most); prefetch: keep (True) or drop (False) the loop's blocks that
# hold PRFM (the optional prefetch of streamed strips); work: what one iteration does (see
# work_of()); peak: the instruction whose model throughput is the peak.
OURS = [
    # int8 GEMM tiles (8 x rows: prefill and the vision tower; no prefetch past 256 x rows).
    dict(id="sdot-q8", group="gemm", name="SDOT q8 strips", file="src/ops/arm/int8_gemm_neon_dotprod.cpp",
         funcs=[r"batch_tile<8, .*Stored\)0>"], key="int8", pick="max",
         prefetch=False, work="int8", peak="sdot", peers=["gemm-q8_0-4x4"]),
    dict(id="sdot-q4", group="gemm", name="SDOT q4 strips", file="src/ops/arm/int8_gemm_neon_dotprod.cpp",
         funcs=[r"batch_tile<8, .*Stored\)1>"], key="int8", pick="max",
         prefetch=False, work="int8", peak="sdot", peers=["gemm-q4_0-4x4"]),
    dict(id="usmmla-q8", group="gemm", name="USMMLA q8 strips", file="src/ops/arm/int8_gemm_neon_i8mm.cpp",
         funcs=[r"i8mm_tile<8, .*Stored\)0>"], key="int8", pick="max",
         prefetch=False, work="int8", peak="usmmla", peers=["gemm-q8_0-4x8-i8mm", "vec-dot-q8_0-i8mm"]),
    dict(id="usmmla-q4", group="gemm", name="USMMLA q4 strips", file="src/ops/arm/int8_gemm_neon_i8mm.cpp",
         funcs=[r"i8mm_tile<8, .*Stored\)1>"], key="int8", pick="max",
         prefetch=False, work="int8", peak="usmmla",
         peers=["gemm-q4_0-4x8-i8mm", "gemm-q4_K-8x8-i8mm", "vec-dot-q4_0-i8mm"]),
    # The ARMv8.0 tile (4 x rows; the `neon` level): one iteration is one group of 4 weight rows.
    dict(id="smull-q8", group="smull", name="SMULL q8 strips", file="src/ops/arm/int8_gemm_neon_smull.cpp",
         funcs=[r"int8_tile_q8s_neon_smull"], key="int8", pick="max", prefetch=False, work="int8",
         peak="smull", neon=True, peers=["vec-dot-q8_0-neon"]),
    dict(id="smull-q4", group="smull", name="SMULL q4 strips", file="src/ops/arm/int8_gemm_neon_smull.cpp",
         funcs=[r"int8_tile_q4s_neon_smull"], key="int8", pick="max", prefetch=False, work="int8",
         peak="smull", neon=True, peers=["vec-dot-q4_0-neon"]),
    # Decode GEMV: the m = 1 tile (decode_tile), strips streamed with prefetch.
    dict(id="gemv-q8", group="gemv", name="SDOT q8, m = 1 (decode)", file="src/ops/arm/int8_gemm_neon_dotprod.cpp",
         funcs=[r"decode_tile<.*Stored\)0>"], key="int8", pick="min",
         prefetch=True, work="int8", peak="sdot", weight_bytes=1.0,
         peers=["gemv-q8_0-4x4", "gemv-q8_0-4x8", "vec-dot-q8_0"]),
    dict(id="gemv-q4", group="gemv", name="SDOT q4, m = 1 (decode)", file="src/ops/arm/int8_gemm_neon_dotprod.cpp",
         funcs=[r"decode_tile<.*Stored\)1>"], key="int8", pick="min",
         prefetch=True, work="int8", peak="sdot", weight_bytes=0.5,
         peers=["gemv-q4_0-4x4", "gemv-q4_0-4x8", "vec-dot-q4_0"]),
    # bf16 weights (the vision tower's default type): the fp32 blocked GEMM's 6 x 16 tile (weights
    # dequantized to fp32 strips when packed) and the bf16 GEMV / small-batch run kernels.
    dict(id="fgemm-tile", group="fgemm", name="FMLA 6 x 16 fp32 tile (bf16 GEMM)", file="src/ops/arm/packed_gemm_neon.cpp",
         funcs=[r"::tile\(void const\*"], key="fmla_elem", pick="max", prefetch=True,
         work="fmla_elem", peak="fmla"),
    dict(id="gemv-bf16", group="fgemm", name="bf16 GEMV, m = 1 (4 groups)", file="src/ops/arm/packed_gemv_neon.cpp",
         funcs=[r"bf16_rows<4, 1>"], key="fma_vec", pick="max", prefetch=True, work="fma_vec",
         peak="fmla_vec"),
    dict(id="batch-bf16", group="fgemm", name="bf16 small batch (1 group x 4 x rows)", file="src/ops/arm/packed_gemv_neon.cpp",
         funcs=[r"bf16_rows<1, 4>"], key="fma_vec", pick="max", prefetch=True, work="fma_vec",
         peak="fmla_vec"),
    # Attention: the flash task's products (FMLA by element; QK^T comes first in the code, PV last).
    dict(id="flash-qk", group="attn", name="flash task QK^T", file="src/ops/arm/attention_neon.cpp",
         funcs=[r"qk_tile\(", r"task_neon\("], key="fmla_elem", pick="max-first", prefetch=True,
         work="fmla_elem", peak="fmla", peers=["vec-dot-f16", "vec-dot-f32"]),
    dict(id="flash-pv", group="attn", name="flash task PV", file="src/ops/arm/attention_neon.cpp",
         funcs=[r"pv_panel\(", r"task_neon\("], key="fmla_elem", pick="max-last", prefetch=True,
         work="fmla_elem", peak="fmla", peers=["vec-mad-f16", "vec-mad-f32"]),
    dict(id="flash-exp", group="attn", name="flash task softmax exp (16 scores)", file="src/ops/arm/attention_neon.cpp",
         funcs=[r"softmax_block\(", r"task_neon\("], key="op:fmaxnm", pick="max", prefetch=True,
         work="store4", peak=None),
    # Decode spans, 2 rows (one kv head's query pair): scores (vector FMLA) and values (by element).
    dict(id="dec-k-f32", group="decode", name="decode K fp32", file="src/ops/arm/attention_decode_neon.cpp",
         funcs=[r"score_keys<2, float>", r"span_kernel<float>\("], key="fma_vec", pick="max", prefetch=True,
         work="fma_vec", peak="fmla_vec", rows=2, peers=["vec-dot-f32"]),
    dict(id="dec-v-f32", group="decode", name="decode V fp32", file="src/ops/arm/attention_decode_neon.cpp",
         funcs=[r"add_values<2, 8, float>", r"span_kernel<float>\("], key="fmla_elem", pick="max", prefetch=True,
         work="fmla_elem", peak="fmla", rows=2, peers=["vec-mad-f32"]),
    dict(id="dec-k-f16", group="decode", name="decode K half", file="src/ops/arm/attention_decode_neon.cpp",
         funcs=[r"score_keys<2, unsigned short>", r"span_kernel<unsigned short>\("], key="fma_vec", pick="max",
         prefetch=True, work="fma_vec", peak="fmla_vec", rows=2, peers=["vec-dot-f16"]),
    dict(id="dec-v-f16", group="decode", name="decode V half", file="src/ops/arm/attention_decode_neon.cpp",
         funcs=[r"add_values<2, 8, unsigned short>", r"span_kernel<unsigned short>\("], key="fmla_elem",
         pick="max", prefetch=True, work="fmla_elem", peak="fmla", rows=2, peers=["vec-mad-f16"]),
    dict(id="dec-k-q8", group="decode", name="decode K 8-bit", file="src/ops/arm/attention_decode_neon.cpp",
         funcs=[r"score_keys<2, signed char>", r"span_kernel<signed char>\("], key="fma_vec", pick="max",
         prefetch=True, work="fma_vec", peak="fmla_vec", rows=2),
    dict(id="dec-v-q8", group="decode", name="decode V 8-bit", file="src/ops/arm/attention_decode_neon.cpp",
         funcs=[r"add_values<2, 8, signed char>", r"span_kernel<signed char>\("], key="fmla_elem", pick="max",
         prefetch=True, work="fmla_elem", peak="fmla", rows=2),
    # Elementwise rows (work: elements, from the bytes the loop stores or loads).
    dict(id="silu", group="elem", name="silu·mul", file="src/ops/arm/elementwise_neon.cpp",
         funcs=[r"silu_mul_neon"], key="op:fdiv", pick="max", prefetch=True, work="store4", peak=None,
         peers=["swiglu"]),
    dict(id="gelu", group="elem", name="gelu-tanh", file="src/ops/arm/elementwise_neon.cpp",
         funcs=[r"gelu_tanh_neon"], key="op:fdiv", pick="max", prefetch=True, work="store4", peak=None,
         peers=["gelu-table"]),
    dict(id="rms-sq", group="elem", name="rms-norm squares (fp64 sum)", file="src/ops/arm/elementwise_neon.cpp",
         funcs=[r"sum_f64<true>", r"rms_norm_row_neon"], key="fma_vec", pick="max", prefetch=True,
         work="load4", peak=None),
    dict(id="rms-scale", group="elem", name="rms-norm scale", file="src/ops/arm/elementwise_neon.cpp",
         funcs=[r"rms_norm_row_neon"], key="store_bytes", pick="max", prefetch=True, work="store4", peak=None),
    dict(id="exp-sum", group="elem", name="exp_sum (exp and fp64 sum)", file="src/ops/arm/elementwise_neon.cpp",
         funcs=[r"exp_sum_neon"], key="fma_vec", pick="max", prefetch=True, work="load4", peak=None,
         peers=["soft-max"]),
    dict(id="f32-f16", group="elem", name="f32->f16", file="src/ops/arm/half_convert_neon.cpp",
         funcs=[r"f32_to_f16_neon"], key="op:fcvtn", pick="max", prefetch=True, work="load4", peak=None),
]

# llama.cpp's peers: variant names a ggml ARM build variant (flags in LLAMA_VARIANTS).
PEERS = [
    dict(id="gemm-q8_0-4x4", name="ggml_gemm_q8_0_4x4_q8_0", file="repack.cpp", variant="dotprod",
         funcs=[r"^ggml_gemm_q8_0_4x4_q8_0$"], key="int8", pick="max", peak="sdot"),
    dict(id="gemm-q4_0-4x4", name="ggml_gemm_q4_0_4x4_q8_0", file="repack.cpp", variant="dotprod",
         funcs=[r"^ggml_gemm_q4_0_4x4_q8_0$"], key="int8", pick="max", peak="sdot"),
    dict(id="gemm-q8_0-4x8-i8mm", name="ggml_gemm_q8_0_4x8_q8_0 (i8mm)", file="repack.cpp", variant="i8mm",
         funcs=[r"^ggml_gemm_q8_0_4x8_q8_0$"], key="int8", pick="max", peak="usmmla"),
    dict(id="gemm-q4_0-4x8-i8mm", name="ggml_gemm_q4_0_4x8_q8_0 (i8mm)", file="repack.cpp", variant="i8mm",
         funcs=[r"^ggml_gemm_q4_0_4x8_q8_0$"], key="int8", pick="max", peak="usmmla"),
    dict(id="gemm-q4_K-8x8-i8mm", name="ggml_gemm_q4_K_8x8_q8_K (i8mm)", file="repack.cpp", variant="i8mm",
         funcs=[r"^ggml_gemm_q4_K_8x8_q8_K$"], key="int8", pick="max", peak="usmmla"),
    dict(id="vec-dot-q8_0-i8mm", name="ggml_vec_dot_q8_0_q8_0 (i8mm, 2 rows)", file="quants.c", variant="i8mm",
         funcs=[r"^ggml_vec_dot_q8_0_q8_0$"], key="n_mmla", pick="max", peak="usmmla"),
    dict(id="vec-dot-q4_0-i8mm", name="ggml_vec_dot_q4_0_q8_0 (i8mm, 2 rows)", file="quants.c", variant="i8mm",
         funcs=[r"^ggml_vec_dot_q4_0_q8_0$"], key="n_mmla", pick="max", peak="usmmla"),
    dict(id="vec-dot-q8_0-neon", name="ggml_vec_dot_q8_0_q8_0 (ARMv8.0: SDOT emulated by SMULL)",
         file="quants.c", variant="neon", funcs=[r"^ggml_vec_dot_q8_0_q8_0$"], key="int8", pick="max",
         peak="smull", neon=True),
    dict(id="vec-dot-q4_0-neon", name="ggml_vec_dot_q4_0_q8_0 (ARMv8.0: SDOT emulated by SMULL)",
         file="quants.c", variant="neon", funcs=[r"^ggml_vec_dot_q4_0_q8_0$"], key="int8", pick="max",
         peak="smull", neon=True),
    dict(id="gemv-q8_0-4x4", name="ggml_gemv_q8_0_4x4_q8_0", file="repack.cpp", variant="dotprod",
         funcs=[r"^ggml_gemv_q8_0_4x4_q8_0$"], key="int8", pick="max", peak="sdot", weight_bytes=1.0),
    dict(id="gemv-q8_0-4x8", name="ggml_gemv_q8_0_4x8_q8_0", file="repack.cpp", variant="dotprod",
         funcs=[r"^ggml_gemv_q8_0_4x8_q8_0$"], key="int8", pick="max", peak="sdot", weight_bytes=1.0),
    dict(id="vec-dot-q8_0", name="ggml_vec_dot_q8_0_q8_0", file="quants.c", variant="dotprod",
         funcs=[r"^ggml_vec_dot_q8_0_q8_0$"], key="int8", pick="max", peak="sdot", weight_bytes=1.0),
    dict(id="gemv-q4_0-4x4", name="ggml_gemv_q4_0_4x4_q8_0", file="repack.cpp", variant="dotprod",
         funcs=[r"^ggml_gemv_q4_0_4x4_q8_0$"], key="int8", pick="max", peak="sdot", weight_bytes=0.5),
    dict(id="gemv-q4_0-4x8", name="ggml_gemv_q4_0_4x8_q8_0", file="repack.cpp", variant="dotprod",
         funcs=[r"^ggml_gemv_q4_0_4x8_q8_0$"], key="int8", pick="max", peak="sdot", weight_bytes=0.5),
    dict(id="vec-dot-q4_0", name="ggml_vec_dot_q4_0_q8_0", file="quants.c", variant="dotprod",
         funcs=[r"^ggml_vec_dot_q4_0_q8_0$"], key="int8", pick="max", peak="sdot", weight_bytes=0.5),
]
# Attention and elementwise peers: ggml's vector routines that llama.cpp's CPU flash attention
# (one query row at a time: vec_dot of the K type, vec_mad into the f16 or f32 accumulator) and
# its unary ops run. Inline ones of vec.h are reached through WRAPPER, compiled beside vec.cpp.
PEERS += [
    dict(id="vec-dot-f32", name="ggml_vec_dot_f32", file="vec.cpp", variant="dotprod",
         funcs=[r"^ggml_vec_dot_f32$"], key="fma_vec", pick="max", work="fma_vec", peak="fmla_vec"),
    dict(id="vec-dot-f16", name="ggml_vec_dot_f16 (fp16 FMLA .8h)", file="vec.cpp", variant="dotprod",
         funcs=[r"^ggml_vec_dot_f16$"], key="fma_vec", pick="max", work="fma_vec", peak="fmla_h"),
    dict(id="vec-mad-f32", name="ggml_vec_mad_f32", file="WRAPPER", variant="dotprod",
         funcs=[r"^qvl_peer_vec_mad_f32$"], key="fma_vec", pick="max", work="fma_vec", peak="fmla_vec"),
    dict(id="vec-mad-f16", name="ggml_vec_mad_f16 (fp16 FMLA .8h)", file="WRAPPER", variant="dotprod",
         funcs=[r"^qvl_peer_vec_mad_f16$"], key="fma_vec", pick="max", work="fma_vec", peak="fmla_h"),
    dict(id="swiglu", name="ggml_vec_swiglu_f32", file="vec.cpp", variant="dotprod",
         funcs=[r"^ggml_vec_swiglu_f32$"], key="op:fdiv", pick="max", work="store4", peak=None),
    dict(id="gelu-table", name="ggml_vec_gelu_f32 (fp16 table)", file="WRAPPER", variant="dotprod",
         funcs=[r"^qvl_peer_vec_gelu_f32$"], key="load_bytes", pick="max", work="store4", peak=None),
    dict(id="soft-max", name="ggml_vec_soft_max_f32 (exp, store, sum)", file="vec.cpp", variant="dotprod",
         funcs=[r"^ggml_vec_soft_max_f32$"], key="fma_vec", pick="max", work="load4", peak=None),
]
WRAPPER = """// Generated by scripts/arm_mca_loops.py: out-of-line copies of vec.h's inline routines.
#include "vec.h"
extern "C" void qvl_peer_vec_mad_f32(int n, float * y, const float * x, float v) { ggml_vec_mad_f32(n, y, x, v); }
extern "C" void qvl_peer_vec_mad_f16(int n, ggml_fp16_t * y, const ggml_fp16_t * x, float v) { ggml_vec_mad_f16(n, y, x, v); }
extern "C" void qvl_peer_vec_gelu_f32(int n, float * y, const float * x) { ggml_vec_gelu_f32(n, y, x); }
"""
for p in PEERS:
    p.setdefault("prefetch", True)
    p.setdefault("work", "int8")

# ggml's CMake, GGML_CPU_ALL_VARIANTS on ARM: armv8.2_2 (DOTPROD FP16_VECTOR_ARITHMETIC) and the
# NEON-only i8mm variant (android_armv8.6_1: DOTPROD FP16_VECTOR_ARITHMETIC MATMUL_INT8; the Linux
# armv8.6_1 adds SVE, whose paths are not NEON). Release flags -O3 -DNDEBUG, C11 / C++17 (GNU).
LLAMA_VARIANTS = {
    "neon": ("-march=armv8-a", []),  # armv8.0_1: no DOTPROD (ggml_vdotq_s32 by SMULL)
    "dotprod": ("-march=armv8.2-a+dotprod+fp16", ["GGML_USE_DOTPROD", "GGML_USE_FP16_VECTOR_ARITHMETIC"]),
    "i8mm": ("-march=armv8.6-a+dotprod+fp16+i8mm",
             ["GGML_USE_DOTPROD", "GGML_USE_FP16_VECTOR_ARITHMETIC", "GGML_USE_MATMUL_INT8"]),
}

# ---------------------------------------------------------------------------------------------
# Assembly parsing.

LABEL_RE = re.compile(r"^([A-Za-z_.$][\w.$]*|\d+):\s*(.*)$")
BRANCH_RE = re.compile(
    r"^(b|b\.\w+|b(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)|cbn?z|tbn?z)\s+(.*)$")


def parse_functions(path):
    """{symbol: [('label', name) | ('insn', text)]} for every function of a GCC .s file
    (inline-asm statements included: 'N:insn' lines, ';' separators)."""
    funcs = {}
    cur = None
    items = []
    with open(path) as f:
        for raw in f:
            line = raw.split("//")[0].rstrip()
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            for stmt in line.split(";"):
                s = stmt.strip()
                while True:
                    m = LABEL_RE.match(s)
                    if not m or (s.startswith(".") and not s.startswith(".L")):
                        break  # not a label, or a directive
                    lab = m.group(1)
                    if cur is None and not lab.isdigit() and not lab.startswith(".L"):
                        cur = lab
                        items = []
                        funcs[cur] = items
                    elif cur is not None:
                        items.append(("label", lab))
                    s = m.group(2).strip()
                if not s:
                    continue
                if s.startswith(".inst"):  # an encoded instruction (inline asm): decoded later
                    if cur is not None:
                        items.append(("insn", ".inst " + s.split()[1]))
                    continue
                if s.startswith("."):
                    if s.startswith(".size") and cur is not None and s.split()[1].rstrip(",") == cur:
                        cur = None
                    continue
                if cur is not None:
                    items.append(("insn", re.sub(r"\s+", " ", s)))
    return funcs


def decode_inst_words(funcs, llvm_mc):
    """Replaces '.inst 0x...' items by their disassembly (llvm-mc), in place."""
    words = sorted({v.split()[1] for items in funcs.values() for k, v in items
                    if k == "insn" and v.startswith(".inst ")})
    if not words:
        return
    lines = []
    for w in words:
        x = int(w, 16)
        lines.append(",".join("0x%02x" % ((x >> (8 * i)) & 0xFF) for i in range(4)))
    r = subprocess.run([llvm_mc, "--disassemble", "-triple=aarch64",
                        "-mattr=+dotprod,+i8mm,+fullfp16,+bf16"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True)
    dis = [re.sub(r"\s+", " ", l.strip()) for l in r.stdout.splitlines()
           if l.strip() and not l.strip().startswith(".")]
    if len(dis) != len(words):
        raise RuntimeError("llvm-mc could not decode every .inst word: " + r.stderr[:500])
    table = {w: ".inst %s // %s" % (w, d) for w, d in zip(words, dis)}
    for items in funcs.values():
        for i, (k, v) in enumerate(items):
            if k == "insn" and v.startswith(".inst "):
                items[i] = ("insn", table[v.split()[1]].split(" // ")[1])


def branch_target(insn):
    m = BRANCH_RE.match(insn)
    return m.group(2).split(",")[-1].strip() if m else None


class Cfg:
    """Basic blocks of one function, successors, dominators, natural loops."""

    def __init__(self, items):
        self.items = items
        labels = {}
        for i, (k, v) in enumerate(items):
            if k == "label":
                labels.setdefault(v, []).append(i)
        # Block starts: index 0, every label, every instruction after a branch or ret.
        starts = {0}
        for i, (k, v) in enumerate(items):
            if k == "label":
                starts.add(i)
            elif branch_target(v) is not None or v.split()[0] in ("ret", "br"):
                starts.add(i + 1)
        starts = sorted(s for s in starts if s < len(items))
        self.blocks = []  # (first item, last item + 1)
        for a, b in zip(starts, starts[1:] + [len(items)]):
            self.blocks.append((a, b))
        block_of = {}
        for bi, (a, b) in enumerate(self.blocks):
            for i in range(a, b):
                block_of[i] = bi
        self.succ = [set() for _ in self.blocks]
        for bi, (a, b) in enumerate(self.blocks):
            insns = [(i, v) for i, (k, v) in enumerate(items[a:b], a) if k == "insn"]
            last_i, last = insns[-1] if insns else (None, "")
            op = last.split()[0] if last else ""
            t = branch_target(last) if last else None
            falls = not (op in ("b", "ret", "br") or (t is not None and op == "b"))
            if falls and bi + 1 < len(self.blocks):
                self.succ[bi].add(bi + 1)
            if t is not None:
                j = self.resolve(t, last_i, labels)
                if j is not None:
                    self.succ[bi].add(block_of[j])
        self.pred = [set() for _ in self.blocks]
        for u, ss in enumerate(self.succ):
            for v in ss:
                self.pred[v].add(u)
        self.dominators()

    @staticmethod
    def resolve(t, at, labels):
        m = re.fullmatch(r"(\d+)([bf])", t)
        if m:
            cand = [j for j in labels.get(m.group(1), []) if (j < at if m.group(2) == "b" else j > at)]
            if not cand:
                return None
            return max(cand) if m.group(2) == "b" else min(cand)
        return labels[t][0] if t in labels else None

    def dominators(self):
        n = len(self.blocks)
        reach = set()
        stack = [0]
        while stack:
            u = stack.pop()
            if u in reach:
                continue
            reach.add(u)
            stack.extend(self.succ[u])
        self.reach = reach
        dom = {u: set(reach) for u in reach}
        dom[0] = {0}
        changed = True
        while changed:
            changed = False
            for u in sorted(reach):
                if u == 0:
                    continue
                ps = [p for p in self.pred[u] if p in reach]
                new = set.intersection(*(dom[p] for p in ps)) if ps else set()
                new = new | {u}
                if new != dom[u]:
                    dom[u] = new
                    changed = True
        self.dom = dom

    def loops(self):
        """Natural loops, merged by header: [(header, frozenset(blocks))]."""
        by_head = {}
        for u in self.reach:
            for h in self.succ[u]:
                if h in self.dom[u]:  # back edge u -> h
                    body = {h}
                    stack = [u]
                    while stack:
                        x = stack.pop()
                        if x in body:
                            continue
                        body.add(x)
                        stack.extend(p for p in self.pred[x] if p in self.reach)
                    by_head.setdefault(h, set()).update(body)
        # Blocks the loop leaves to and that only come back into it (e.g. a prefetch block that
        # GCC placed out of line and also enters from before the loop, so h does not dominate it).
        for h, body in by_head.items():
            grown = True
            while grown:
                grown = False
                for x in self.reach - body:
                    if self.succ[x] and self.succ[x] <= body and self.pred[x] & body:
                        body.add(x)
                        grown = True
        return [(h, frozenset(b)) for h, b in sorted(by_head.items())]

    def insns(self, blocks):
        out = []
        for bi in sorted(blocks):
            a, b = self.blocks[bi]
            out.extend((bi, v) for k, v in self.items[a:b] if k == "insn")
        return out


# ---------------------------------------------------------------------------------------------
# Instruction counting.

REG_BYTES = {"q": 16, "d": 8, "x": 8, "s": 4, "w": 4, "h": 2, "b": 1}
ARR_BYTES = {"16b": 16, "8h": 16, "4s": 16, "2d": 16, "8b": 8, "4h": 8, "2s": 8, "1d": 8}
ARR_LANES = {"4s": 4, "2d": 2, "2s": 2, "8h": 8, "4h": 4}  # (4h/8h: fp16 arithmetic)
ELEM_BYTES = {"b": 1, "h": 2, "s": 4, "d": 8}


def mem_bytes(op, operands):
    """Bytes moved by a load or store instruction (0 if unknown)."""
    regs = operands.split("[")[0]
    if op.startswith(("ld1", "ld2", "ld3", "ld4", "st1", "st2", "st3", "st4")):
        lst = re.search(r"\{([^}]*)\}(\[\d+\])?", operands)
        if not lst:
            return 0
        vs = [v.strip() for v in re.split(r",|-", lst.group(1)) if v.strip()]
        if "-" in lst.group(1):  # {v0.16b - v3.16b}
            a, b = (int(re.match(r"v(\d+)", v).group(1)) for v in vs[:2])
            count = (b - a) % 32 + 1
        else:
            count = len(vs)
        arr = vs[0].split(".")[-1]
        if lst.group(2) or op.endswith("r"):  # one lane, or LD1R: one element per register
            return count * ELEM_BYTES.get(arr[-1], 0)
        return count * ARR_BYTES.get(arr, 0)
    size = {"ldrb": 1, "ldrsb": 1, "strb": 1, "ldurb": 1, "sturb": 1, "ldrh": 2, "ldrsh": 2,
            "strh": 2, "ldurh": 2, "sturh": 2, "ldrsw": 4, "ldursw": 4}.get(op)
    if size:
        return size
    first = regs.split(",")[0].strip()
    per = REG_BYTES.get(first[:1], 0)
    return per * (2 if op in ("ldp", "stp", "ldnp", "stnp", "ldpsw") else 1)


def count(insns):
    c = dict(insns=0, int8=0, n_dot=0, n_mmla=0, fmla_elem=0, fma_vec=0, loads=0, load_bytes=0,
             stores=0, store_bytes=0, loads16=0, loads8=0, loads_small=0)
    for _, text in insns:
        parts = text.split(None, 1)
        op, operands = parts[0], (parts[1] if len(parts) > 1 else "")
        c["insns"] += 1
        c["op:" + op] = c.get("op:" + op, 0) + 1
        dest = operands.split(",")[0].strip()
        arr = dest.split(".")[-1] if "." in dest else ""
        by_elem = "[" in operands and op in ("sdot", "udot", "usdot", "sudot", "fmla", "fmls", "fmul")
        if op in ("sdot", "udot", "usdot", "sudot"):
            c["int8"] += 16 if arr == "4s" else 8
            c["n_dot"] += 1
        elif op in ("smmla", "ummla", "usmmla"):
            c["int8"] += 32
            c["n_mmla"] += 1
        elif op in ("smull", "smull2", "smlal", "smlal2") and arr == "8h":
            c["int8"] += 8  # 8 byte products (the SMULL tile, ARMv8.0 dots)
        elif op in ("fmla", "fmls", "fmul") and arr in ARR_LANES:
            lanes = ARR_LANES[arr]
            if by_elem and op != "fmul":
                c["fmla_elem"] += lanes
            elif not by_elem:
                c["fma_vec"] += lanes
        if op.startswith("ld") and not op.startswith("ldax"):
            nb = mem_bytes(op, operands)
            c["loads"] += 1
            c["load_bytes"] += nb
            key = "loads16" if nb >= 16 else "loads8" if nb == 8 else "loads_small"
            c[key] += 1
        elif op.startswith("st") and not op.startswith("stl"):
            c["stores"] += 1
            c["store_bytes"] += mem_bytes(op, operands)
    return c


def work_of(kind, c):
    if kind == "int8":
        return c["int8"]
    if kind in ("fmla_elem", "fma_vec"):
        return c[kind]
    if kind == "store4":
        return c["store_bytes"] / 4
    if kind == "load4":
        return c["load_bytes"] / 4
    raise ValueError(kind)


# ---------------------------------------------------------------------------------------------
# Loop selection.

class Found:
    pass


def find_loop(asm_funcs, demangled, spec):
    for pat in spec["funcs"]:
        cands = []
        for sym, dem in demangled.items():
            if not re.search(pat, dem):
                continue
            cfg = Cfg(asm_funcs[sym])
            for h, blocks in cfg.loops():
                c = count(cfg.insns(blocks))
                cands.append((sym, dem, cfg, h, blocks, c))
        key = spec["key"]
        cands = [x for x in cands if x[5].get(key, 0) > 0]
        if not cands:
            continue
        # Innermost loops (holding no other loop) first; outer ones only if none has the key.
        innermost = [x for x in cands
                     if not any(l[0] != x[3] and l[1] < x[4] for l in x[2].loops())]
        cands = innermost or cands
        pick = spec["pick"]
        target = (min if pick == "min" else max)(x[5][key] for x in cands)
        best = [x for x in cands if x[5][key] == target]
        # innermost: drop a loop that contains another candidate of the same function
        inner = [x for x in best
                 if not any(y is not x and y[0] == x[0] and y[4] < x[4] for y in best)]
        inner.sort(key=lambda x: (list(demangled).index(x[0]), x[3]))
        chosen = inner[-1] if pick == "max-last" else inner[0]
        sym, dem, cfg, h, blocks, c = chosen
        f = Found()
        f.sym, f.dem, f.cfg, f.blocks = sym, dem, cfg, blocks
        f.variants = len(inner)
        f.nested = [l for l in cfg.loops() if l[0] != h and l[1] < blocks]
        body = cfg.insns(blocks)
        f.dropped = 0
        if not spec.get("prefetch", True):
            pf = {bi for bi, t in body if t.startswith("prfm")}
            f.dropped = len(pf)
            body = [(bi, t) for bi, t in body if bi not in pf]
        f.has_prefetch = any(t.startswith("prfm") for _, t in body)
        f.body = body
        f.counts = count(body)
        f.cond_branches = sum(1 for _, t in body if branch_target(t) is not None
                              and not t.startswith("b "))
        return f
    return None


def mca_text(body):
    lines = [".Lmca_top:"]
    for _, t in body:
        tgt = branch_target(t)
        if tgt is not None:
            head = t[: t.rfind(tgt)] if not t.endswith(tgt) else t[: len(t) - len(tgt)]
            t = head + ".Lmca_top"
        lines.append("\t" + t)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# llvm-mca.

def run_mca(mca, cpu, text, iterations=100):
    r = subprocess.run([mca, "-mtriple=aarch64", "-mcpu=" + cpu, "-iterations=%d" % iterations],
                       input=text, capture_output=True, text=True)
    if r.returncode != 0:
        err = r.stderr.strip().splitlines()
        msg = next((l for l in err if "error" in l), err[0] if err else "failed")
        if "instruction requires" in msg:
            return dict(na=re.sub(r".*instruction requires:\s*", "", msg))
        return dict(error=msg)
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"(Iterations|Instructions|Total Cycles|Block RThroughput|IPC):\s*([\d.]+)", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    out["cycles"] = out["Total Cycles"] / out["Iterations"]
    out["rthroughput"] = out["Block RThroughput"]
    return out


PEAK_INSNS = {
    "sdot": ("sdot v{i}.4s, v28.16b, v29.4b[1]", 16, "SDOT (by element)"),
    "usmmla": ("usmmla v{i}.4s, v28.16b, v29.16b", 32, "USMMLA"),
    "smull": ("smlal v{i}.8h, v28.8b, v29.8b", 8, "SMULL/SMLAL .8h"),
    "fmla": ("fmla v{i}.4s, v28.4s, v29.s[1]", 4, "FMLA .4s (by element)"),
    "fmla_vec": ("fmla v{i}.4s, v28.4s, v29.4s", 4, "FMLA .4s"),
    "fmla_h": ("fmla v{i}.8h, v28.8h, v29.8h", 8, "FMLA .8h"),
    "ldq": ("ldr q{i}, [x0, #{o}]", 16, "LDR q"),
}


def model_peaks(mca, cpus):
    """Per core: instructions per cycle of 24 independent copies, by the model's resources."""
    peaks = {}
    for cpu, _ in cpus + [("cortex-a76", "")]:
        peaks[cpu] = {}
        for k, (tmpl, _, _) in PEAK_INSNS.items():
            text = "\n".join(tmpl.format(i=i, o=16 * i) for i in range(24)) + "\n"
            r = run_mca(mca, cpu, text)
            peaks[cpu][k] = None if "cycles" not in r else 24 / r["rthroughput"]
    return peaks


# ---------------------------------------------------------------------------------------------
# Compiling.

def qvl_march(root, rel):
    """-march of cmake/QvlArch.cmake for a source file (by its name's suffix)."""
    text = open(os.path.join(root, "cmake/QvlArch.cmake")).read()
    name = os.path.basename(rel)
    for pat, opts in re.findall(r'source MATCHES "([^"]+)"\)\s*set_source_files_properties\([^)]*'
                                r'COMPILE_OPTIONS "([^"]+)"', text):
        if re.search(pat.replace("\\\\", "\\"), name):
            return opts.split()
    return []


def check_build_flags(root, rel, cmd):
    """Warns (stderr) when an aarch64 build's compile_commands.json compiles rel otherwise."""
    import json
    path = os.path.join(root, "build-aarch64", "compile_commands.json")
    if not os.path.exists(path):
        return
    for e in json.load(open(path)):
        if os.path.realpath(e["file"]) != os.path.realpath(os.path.join(root, rel)):
            continue
        words = e.get("command", "").split() or e.get("arguments", [])
        keep = set()
        skip = False
        for x in words[1:]:
            if skip:
                skip = False
                continue
            if x in ("-o", "-c"):
                skip = True
                continue
            if x.startswith("-") and not x.startswith(("-W", "-D", "-I")) or x.startswith(("-DNDEBUG", "-I")):
                keep.add(x if not x.startswith("-I") else "-I" + os.path.realpath(x[2:]))
        ours = {x if not x.startswith("-I") else "-I" + os.path.realpath(x[2:]) for x in cmd[1:-1]}
        if keep != ours:
            sys.stderr.write("arm_mca: note: build-aarch64 compiles %s with %s, this script with %s\n"
                             % (rel, " ".join(sorted(keep - ours)) or "-", " ".join(sorted(ours - keep)) or "-"))


def compile_to_asm(cmd, out, cache):
    key = (tuple(cmd), out)
    if key in cache:
        return cache[key]
    r = subprocess.run(cmd + ["-S", "-o", out], capture_output=True, text=True)
    cache[key] = None if r.returncode != 0 else out
    if r.returncode != 0:
        sys.stderr.write("arm_mca: compile failed: %s\n%s\n" % (" ".join(cmd), r.stderr[-2000:]))
        cache[key] = ("error", r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed")
    return cache[key]


def demangle(cxxfilt, syms):
    out = subprocess.run([cxxfilt], input="\n".join(syms), capture_output=True, text=True).stdout
    return dict(zip(syms, out.splitlines()))


# ---------------------------------------------------------------------------------------------
# Report.

def fmt(x, nd=0):
    if x is None:
        return "n/a"
    if nd == 0:
        return "%d" % round(x)
    return ("%%.%df" % nd) % x


def short(dem):
    d = dem.replace("qvl::ops::", "").replace("(anonymous namespace)::", "")
    d = re.sub(r"\(qvl::ops::kernels::Int8Tile const&\)", "", d)
    d = re.sub(r"kernels::|attention_kernels::|elementwise_kernels::", "", d)
    d = re.sub(r"\(Stored\)0", "Stored::kQ8", d)
    d = re.sub(r"\(Stored\)1", "Stored::kQ4", d)
    d = re.sub(r"^(void|double|float) ", "", d)
    d = re.sub(r"\{lambda\(([^()]*)\)#(\d+)\}", r"{lambda#\2}", d)
    prev = None
    while prev != d:  # argument lists, innermost first
        prev = d
        d = re.sub(r"\([^()]*\)", "", d)
    return re.sub(r"::operator$", "", d.replace(" const", ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--llama-src", default="")
    ap.add_argument("--llama-label", default="")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cxx", default="aarch64-linux-gnu-g++")
    ap.add_argument("--cc", default="aarch64-linux-gnu-gcc")
    ap.add_argument("--cxxfilt", default="aarch64-linux-gnu-c++filt")
    ap.add_argument("--mca", default="llvm-mca-19")
    ap.add_argument("--llvm-mc", default="llvm-mc-19")
    ap.add_argument("--command", default="scripts/arm_mca.sh")
    ap.add_argument("--dump", default="", help="write each loop's llvm-mca input into this folder")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    cache = {}
    results = {}

    def measure(spec, asm_path):
        if isinstance(asm_path, tuple) or asm_path is None:
            return dict(error="compile failed: %s" % (asm_path[1] if asm_path else ""))
        funcs = parse_functions(asm_path)
        decode_inst_words(funcs, a.llvm_mc)
        dem = demangle(a.cxxfilt, list(funcs))
        f = find_loop(funcs, dem, spec)
        if f is None:
            return dict(error="no loop with %s found in %s" % (spec["key"], " / ".join(spec["funcs"])))
        text = mca_text(f.body)
        if a.dump:
            os.makedirs(a.dump, exist_ok=True)
            with open(os.path.join(a.dump, spec["id"] + ".s"), "w") as fh:
                fh.write(text)
        res = dict(found=f, mca={})
        for cpu, _ in CPUS + [("apple-m1", "")] + (NEON_CPUS if spec.get("neon") else []):
            res["mca"][cpu] = run_mca(a.mca, cpu, text)
        res["work"] = work_of(spec["work"], f.counts)
        return res

    base = ["-O3", "-DNDEBUG", "-ffp-contract=off", "-std=c++20",
            "-I" + os.path.join(a.root, "src"), "-I" + os.path.join(a.root, "include")]
    qvl_cmds = {}
    for spec in OURS:
        src = os.path.join(a.root, spec["file"])
        cmd = [a.cxx] + base + qvl_march(a.root, spec["file"]) + [src]
        if spec["file"] not in qvl_cmds:
            check_build_flags(a.root, spec["file"], cmd)
        qvl_cmds[spec["file"]] = cmd
        out = os.path.join(a.work, "qvl_" + os.path.basename(spec["file"]) + ".s")
        results[spec["id"]] = measure(spec, compile_to_asm(cmd, out, cache))

    llama_cmds = {}
    if a.llama_src:
        L = a.llama_src
        inc = ["-I" + os.path.join(L, p) for p in ("ggml/include", "ggml/src", "ggml/src/ggml-cpu")]
        for spec in PEERS:
            march, defs = LLAMA_VARIANTS[spec["variant"]]
            if spec["file"] == "WRAPPER":
                src = os.path.join(a.work, "qvl_peer_wrapper.cpp")
                with open(src, "w") as fh:
                    fh.write(WRAPPER)
            elif spec["file"] == "vec.cpp":
                src = os.path.join(L, "ggml/src/ggml-cpu/vec.cpp")
            else:
                src = os.path.join(L, "ggml/src/ggml-cpu/arch/arm", spec["file"])
            cpp = src.endswith(".cpp")
            cmd = ([a.cxx, "-std=gnu++17"] if cpp else [a.cc, "-std=gnu11"]) + \
                ["-O3", "-DNDEBUG", "-D_GNU_SOURCE", "-D_XOPEN_SOURCE=600"] + inc + [march] + \
                ["-D" + d for d in defs] + [src]
            llama_cmds[(spec["file"], spec["variant"])] = cmd
            out = os.path.join(a.work, "llama_%s_%s.s" % (spec["variant"], spec["file"]))
            results[spec["id"]] = measure(spec, compile_to_asm(cmd, out, cache))

    peaks = model_peaks(a.mca, CPUS + NEON_CPUS)
    write_report(a, results, peaks, qvl_cmds, llama_cmds)


def version_line(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0].strip()
    except Exception:  # noqa: BLE001
        return "?"


def write_report(a, results, peaks, qvl_cmds, llama_cmds):
    R = a.root
    L = []
    w = L.append
    cpus = CPUS
    gcc = version_line([a.cxx, "--version"])
    mver = subprocess.run([a.mca, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"LLVM version [\w.~+-]+", mver)
    mca = m.group(0) if m else "?"
    rev = subprocess.run(["git", "-C", R, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                         text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", R, "status", "--porcelain", "--", "src/ops", "cmake/QvlArch.cmake"],
                           capture_output=True, text=True).stdout.strip()

    def rel(cmd):
        return " ".join(x.replace(R + "/", "").replace(a.llama_src + "/", "") if a.llama_src else
                        x.replace(R + "/", "") for x in cmd)

    def pct(res, spec, cpu):
        m = res["mca"][cpu]
        kind = spec.get("peak")
        if not kind or "cycles" not in m or not res["work"]:
            return None
        per = PEAK_INSNS[kind][1] * peaks[cpu][kind]
        return 100.0 * res["work"] / (m["cycles"] * per)

    def per1k(res, cpu):
        m = res["mca"][cpu]
        if "cycles" not in m or not res["work"]:
            return None
        return m["cycles"] * 1024.0 / res["work"]

    def cell(res, spec, cpu, unit="1k"):
        if "error" in res:
            return "error"
        m = res["mca"][cpu]
        if "na" in m:
            return "n/a"
        if "cycles" not in m:
            return "error"
        p = pct(res, spec, cpu)
        if unit == "1k":
            s = fmt(per1k(res, cpu))
        elif unit == "elem":
            s = fmt(m["cycles"] / res["work"], 2)
        else:
            s = fmt(m["cycles"], 1)
        return s + (" (%d%%)" % round(p) if p is not None else "")

    w("# llvm-mca figures of the aarch64 kernels, beside llama.cpp's")
    w("")
    w("Generated by `%s` (scripts/arm_mca_loops.py): do not edit by hand. Static analysis, not a "
      "measurement: no ARM hardware was used." % a.command)
    w("")
    w("- qvl source: commit `%s`%s" % (rev, " with uncommitted changes in src/ops or cmake/QvlArch.cmake" if dirty else ""))
    w("- compiler: `%s` (Debian); qvl files as the Release build compiles them: `%s" %
      (gcc, rel(qvl_cmds[OURS[0]["file"]][:-1]).replace(" -march=armv8.2-a+dotprod", "") +
       " -S`, plus the file's `-march` from cmake/QvlArch.cmake (`_dotprod`: `-march=armv8.2-a+dotprod`, "
       "`_i8mm`: `-march=armv8.2-a+dotprod+i8mm`, others: the armv8-a baseline)"))
    w("- llvm-mca: %s, `llvm-mca-19 -mtriple=aarch64 -mcpu=CORE -iterations=100`" % mca)
    if a.llama_src:
        w("- llama.cpp: %s; ggml's ARM files compiled with ggml's Release flags for two of its "
          "CPU variants: dotprod = `%s` (variant armv8.2_2), i8mm = `%s` (variant android_armv8.6_1, "
          "NEON only: the Linux armv8.6_1 variant adds SVE, whose paths are not NEON)" %
          (a.llama_label or a.llama_src, LLAMA_VARIANTS["dotprod"][0], LLAMA_VARIANTS["i8mm"][0]))
    else:
        w("- llama.cpp: not measured (no source given)")
    w("")
    w("Each cell (but the elementwise and softmax ones, cycles per element): cycles per 1024 "
      "multiply-adds (int8 MACs or fp32 FMAs) from llvm-mca's simulated "
      "cycles per loop iteration (Total Cycles / 100 iterations, so dependency chains count, not "
      "only the resource bound), and in brackets the share of the core model's peak for the "
      "loop's multiply instruction (SDOT, USMMLA/SMMLA or FMLA; table at the end). n/a: the core "
      "lacks the instruction's extension (N1 and the A76 have no i8mm).")
    w("")
    hdr = "| loop | work / iteration | " + " | ".join(n for _, n in cpus) + " |"
    sep = "|---|---|" + "---|" * len(cpus)

    peer_by_id = {p["id"]: p for p in PEERS}

    def rows_for(specs, unit="1k", with_peers=True, worklabel="MACs"):
        w(hdr)
        w(sep)
        for spec in specs:
            res = results[spec["id"]]
            wl = "error" if "error" in res else ("%s %s" % (fmt(res["work"]), worklabel))
            w("| **qvl %s** | %s | " % (spec["name"], wl) +
              " | ".join(cell(res, spec, c, unit) for c, _ in cpus) + " |")
            if with_peers and a.llama_src:
                for pid in spec.get("peers", []):
                    ps = peer_by_id[pid]
                    pr = results.get(pid, {"error": "not run"})
                    wl = "error" if "error" in pr else "%s MACs" % fmt(pr["work"])
                    w("| llama.cpp %s | %s | " % (ps["name"], wl) +
                      " | ".join(cell(pr, ps, c, unit) for c, _ in cpus) + " |")
        w("")

    w("## int8 GEMM tiles (prefill, vision tower): 16 weight rows x 8 x rows, a pass per 4 rows")
    w("")
    w("Our tiles without their optional prefetch (on only for batches of at most 256 rows); they "
      "take a pass per group of 4 weight rows over a chunk of 16 blocks, their fp32 sums in "
      "registers, so one iteration is one block of 32 columns of 4 weight rows against the 8 x "
      "rows. Each llama.cpp loop has its own block (its work "
      "column), so compare the cells, which are per 1024 MACs. Peers: the repacked Q8_0/Q4_0 "
      "GEMMs (interleaved 4 columns; dotprod, or i8mm for the 4x8 ones), the i8mm Q4_K 8x8 GEMM, "
      "and the i8mm path of the plain vec_dot (two rows by two columns per SMMLA).")
    w("")
    rows_for([s for s in OURS if s["group"] == "gemm"])
    w("Bound. Per 4 outputs (4 weight rows x one x row) and block of 32 columns a tile issues 8 "
      "SDOT (or 4 USMMLA) and, however it is arranged, 3 vector instructions of the fp32 update "
      "that keeps every row's bits: the int-to-float of the exact dot (FSUB of the magic bits, or "
      "SCVTF #4), the scale product w_scale x x_scale and the FMLA (the accumulators start with a "
      "load, off the vector pipes; the sums stay in registers). The weights' conversion, shared "
      "by the 8 x rows, adds 1 per 4 outputs (q8: EOR for SDOT, 2 ZIPs per 2 loads for USMMLA), "
      "1.5 (q4 SDOT: EOR, SHL, AND per 16 bytes of nibbles) or 2 (q4 USMMLA: AND, USHR, 2 ZIPs), "
      "the weight scales' widening about 0.25-0.4. Every core here runs SDOT/USMMLA and the fp32 "
      "ops on the same vector pipes, so the share of the peak is at most 8 / (8 + 3) = 73% for "
      "SDOT and 4 / (4 + 3) = 57% for USMMLA even with a free conversion, and with it 8 / 12.25 "
      "= 65% (SDOT q8), 8 / 12.75 = 63% (SDOT q4), 4 / 8.4 = 48% (USMMLA q8) and 4 / 9.4 = 43% "
      "(USMMLA q4). The issue's 80% is out of reach for a block-32 quant whose per-block fp32 "
      "scale is applied per output in fp32; the cells above sit at these bounds (N1: 49 and 51 "
      "cycles for a 32-cycle peak). Past them only a format change helps: larger blocks, or "
      "integer sub-scales as in q4_K, so that int32 sums span more columns per fp32 update.")
    w("")

    ncpus = NEON_CPUS + CPUS[:1]
    w("## int8 GEMM tile without dotprod (`neon` level): SMULL/SMLAL + SADALP, 16 weight rows x 4 x rows")
    w("")
    w("The ARMv8.0 tile (src/ops/arm/int8_gemm_neon_smull.cpp) on the cores that run it: one "
      "iteration is one group of 4 weight rows against the 4 x rows over a block of 32 columns "
      "(512 MACs). Peak: SMULL/SMLAL .8h (8 byte products) per cycle x 8; SADALP, the quad DUPs, "
      "the q8 sign flip and the fp32 update come on top. Peers: llama.cpp's plain vec_dot, "
      "compiled for its armv8.0_1 variant (`%s`), where ggml_vdotq_s32 is SMULL + SMULL2 + "
      "pairwise adds (its repacked GEMMs need dotprod)." % LLAMA_VARIANTS["neon"][0])
    w("")
    w("| loop | work / iteration | " + " | ".join(n for _, n in ncpus) + " |")
    w("|---|---|" + "---|" * len(ncpus))
    for spec in [s for s in OURS if s["group"] == "smull"]:
        ids = [(spec["id"], spec, "**qvl %s**" % spec["name"])]
        if a.llama_src:
            ids += [(pid, peer_by_id[pid], "llama.cpp " + peer_by_id[pid]["name"]) for pid in spec["peers"]]
        for rid, sp, label in ids:
            res = results.get(rid, {"error": "not run"})
            wl = "error" if "error" in res else "%s MACs" % fmt(res["work"])
            w("| %s | %s | " % (label, wl) + " | ".join(cell(res, sp, c) for c, _ in ncpus) + " |")
    w("")
    w("SMULL/SMLAL .8h per cycle in the models: " + ", ".join(
        "%s %s" % (n, fmt(peaks[c]["smull"], 2)) for c, n in ncpus) + ".")
    w("")

    w("## Decode GEMV (m = 1): SDOT on streamed strips, with prefetch")
    w("")
    w("Our m = 1 tile: one iteration is one block of 32 columns of the 16 weight rows against the "
      "one x row (the dotprod tile also serves m = 1 on i8mm cores), a quad of the 16 rows being "
      "one 64-byte LD1. llama.cpp's peers: its repacked GEMVs (4 interleaved columns) and the "
      "plain vec_dot of a row. Bound at m = 1, per 4 outputs and block: 8 SDOT, the weights' "
      "conversion for that one x row (8: an EOR per q8 quad, since the stored strips hold "
      "q + 128, the layout shared with x86's VNNI, where llama.cpp's repacked q8_0 is signed; "
      "an AND or USHR per q4 quad), the 3 of the fp32 update and 2 for the scales' widening "
      "(FCVTL is 2 uops): 8 / 21 = 38% of the SDOT peak, 84 cycles per 1024 MACs on N1.")
    w("")
    rows_for([s for s in OURS if s["group"] == "gemv"])
    w("### Decode loads per 16 bytes of weights")
    w("")
    w("The issue's target: at most one load per 16 bytes of weights. Weight bytes per iteration = "
      "MACs x bytes per weight (m = 1: each weight meets one x value; q8 1 byte, q4 half a byte; "
      "scales not counted). Loads: every load instruction of the loop (weights, x, scales, the "
      "fp32 outputs c), split by size (an LDP or a multi-register LD1 is one load of all its "
      "bytes); `per 16 B` = loads / (weight bytes / 16).")
    w("")
    w("| loop | weight bytes / it | loads / it (16 B, 8 B, <= 4 B) | bytes loaded / it | loads per 16 B of weights | 16-byte loads per 16 B |")
    w("|---|---|---|---|---|---|")
    for spec in [s for s in OURS if s["group"] == "gemv"]:
        ids = [(spec["id"], spec, "**qvl %s**" % spec["name"])]
        if a.llama_src:
            ids += [(pid, peer_by_id[pid], "llama.cpp " + peer_by_id[pid]["name"]) for pid in spec["peers"]]
        for rid, sp, label in ids:
            res = results.get(rid, {})
            if "error" in res or not res:
                w("| %s | error | | | | |" % label)
                continue
            c = res["found"].counts
            wb = res["work"] * sp["weight_bytes"]
            w("| %s | %s | %d (%d, %d, %d) | %d | %.2f | %.2f |" % (
                label, fmt(wb), c["loads"], c["loads16"], c["loads8"], c["loads_small"],
                c["load_bytes"], c["loads"] / (wb / 16), c["loads16"] / (wb / 16)))
    w("")

    def unit_of(spec):
        if spec["work"] == "int8":
            return "MACs", "1k"
        if spec["work"].startswith("fm"):
            return "FMAs", "1k"
        return "elements", "elem"

    def ours_and_peers(spec):
        out = [(spec, results[spec["id"]], "**qvl %s**" % spec["name"])]
        if a.llama_src:
            for pid in spec.get("peers", []):
                out.append((peer_by_id[pid], results.get(pid, {"error": "not run"}),
                            "llama.cpp " + peer_by_id[pid]["name"]))
        return out

    def simple_rows(specs, extra=None):
        for spec in specs:
            for sp, res, label in ours_and_peers(spec):
                if "error" in res:
                    w("| %s | error: %s |%s" % (label, res["error"], " |" * len(cpus)))
                    continue
                wl, unit = unit_of(sp)
                line = "| %s | %s %s | " % (label, fmt(res["work"]), wl) + \
                    " | ".join(cell(res, sp, c, unit) for c, _ in cpus) + " |"
                if extra:
                    line += " " + extra(spec, sp, res) + " |"
                w(line)

    w("## bf16 weights: fp32 GEMM tile and bf16 GEMV")
    w("")
    w("The blocked GEMM's register tile (`tile`, packed_gemm_neon.cpp: 6 x rows by 16 weight rows, "
      "24 accumulators, FMLA by element; one iteration is one k step, unrolled twice by the "
      "compiler), and the bf16 run kernels (packed_gemv_neon.cpp: USHLL #16 widens 4 bf16 to "
      "fp32, vector FMLA with 4 columns of x; one iteration is 4 columns, the weights' prefetch "
      "sits in the loop over blocks around it). Work = FMAs. No llama.cpp peer measured (its "
      "bf16 and fp32 CPU paths are other designs: bf16 dot products or llamafile's sgemm).")
    w("")
    w(hdr)
    w(sep)
    simple_rows([s for s in OURS if s["group"] == "fgemm"])
    w("")

    w("## Attention")
    w("")
    w("Flash task (`task_neon`, prefill and vision): 4 rows in the lanes, FMLA by element; work = "
      "FMAs (16 FMLA .4s = 64 per step). The softmax exp loop's cells are cycles per score "
      "(16 scores per iteration), no peak. llama.cpp's CPU flash attention takes one query row "
      "at a time: QK^T by the K type's vec_dot (F16 K by default: fp16 FMLA .8h when the CPU "
      "has fp16 arithmetic, as the A76 and N1 do: products and sums rounded to half precision, "
      "where ours convert to fp32), PV by vec_mad into an f16 or f32 row; their fp16 cells' "
      "share is of the model's FMLA .8h peak (8 FMAs each).")
    w("")
    w(hdr)
    w(sep)
    simple_rows([s for s in OURS if s["group"] == "attn"])
    w("")
    w("Decode spans (2 rows of one kv head, head_dim 128): cycles per 1024 FMAs (peak share), "
      "and cycles per key = cycles per FMA x 2 rows x 128 columns (the same for the llama.cpp "
      "rows, which take the rows one at a time). No llama.cpp peer for the 8-bit spans (its "
      "quantized K goes through the int8 vec_dot above, its V is converted to f32 first).")
    w("")
    w("| loop | work / iteration | " + " | ".join(n for _, n in cpus) + " | cycles per key (" +
      ", ".join(n for _, n in cpus) + ") |")
    w("|---|---|" + "---|" * (len(cpus) + 1))

    def per_key(spec, sp, res):
        keys = []
        for c, _ in cpus:
            m = res["mca"][c]
            keys.append(fmt(m["cycles"] / res["work"] * spec["rows"] * 128, 1) if "cycles" in m else "n/a")
        return " / ".join(keys)

    simple_rows([s for s in OURS if s["group"] == "decode"], per_key)
    w("")

    w("## Elementwise rows: cycles per element")
    w("")
    w("llama.cpp peers: its swiglu (silu(gate) * up, NEON exp), its gelu (an fp16 lookup table, "
      "GGML_GELU_FP16: not the same arithmetic) and its softmax row (exp, store, sum). Its "
      "rms-norm (a scalar double loop in ops.cpp) and f32->f16 (ggml-cpu.c) are not compiled.")
    w("")
    w(hdr)
    w(sep)
    simple_rows([s for s in OURS if s["group"] == "elem"])
    w("")

    # Summary: below 80 % and slower than peers.
    w("## Summary")
    w("")
    low, slower = [], []
    for spec in OURS:
        res = results[spec["id"]]
        if "error" in res:
            continue
        below = [(n, round(pct(res, spec, c))) for c, n in cpus
                 if pct(res, spec, c) is not None and round(pct(res, spec, c)) < 80]
        if below:
            low.append("%s (%s)" % (spec["name"], ", ".join("%s %d%%" % x for x in below)))
        if a.llama_src:
            for c, n in cpus:
                ours = per1k(res, c) if "cycles" in res["mca"][c] else None
                best = None
                for pid in spec.get("peers", []):
                    pr = results.get(pid, {})
                    if "error" in pr or not pr or "cycles" not in pr["mca"][c]:
                        continue
                    v = per1k(pr, c)
                    if best is None or v < best[0]:
                        best = (v, peer_by_id[pid]["name"])
                if ours is not None and best is not None and best[0] < ours:
                    slower.append("%s on %s: %s vs %s cycles per 1024 %s, +%d%% (%s)" % (
                        spec["name"], n, fmt(ours), fmt(best[0]), unit_of(spec)[0],
                        round(100 * (ours / best[0] - 1)), best[1]))
    w("Below 80% of the model's peak: " + ("; ".join(low) if low else "none") + ".")
    w("")
    if a.llama_src:
        w("Slower than llama.cpp's best peer (cycles per 1024 MACs, FMAs or elements, lower is better):")
        w("")
        for s in slower or ["none"]:
            w("- " + s)
        w("")

    # Peaks.
    w("## Core models and peaks")
    w("")
    w("Peak = the model's own throughput for 24 independent copies of the instruction (Block "
      "RThroughput), in instructions per cycle; x 16 (SDOT), x 32 (USMMLA: a 2x8 by 8x2 int8 "
      "product into 2x2 int32) or x 4 (FMLA .4s) multiply-adds per instruction.")
    w("")
    w("| core (`-mcpu`) | stands for | SDOT / cycle | USMMLA / cycle | FMLA .4s by element / cycle | FMLA .4s / cycle | FMLA .8h (fp16) / cycle | LDR q / cycle |")
    w("|---|---|---|---|---|---|---|---|")
    stands = {
        "neoverse-n1": "Neoverse-N1 (Graviton2, Ampere Altra) and the Cortex-A76 (Raspberry Pi 5): "
                       "same microarchitecture; LLVM's own `cortex-a76` model is weaker (last row: half the FMLA and q-load rate)",
        "neoverse-n2": "Neoverse-N2 (2 x 128-bit SIMD)",
        "neoverse-v1": "Neoverse-V1 (Graviton3; 4 x 128-bit SIMD)",
        "neoverse-v2": "Neoverse-V2 (Graviton4, Grace; 4 x 128-bit SIMD)",
        "apple-m2": "Apple M2 (LLVM 19's Apple model; M1 has no i8mm, so `apple-m1` cannot run the USMMLA loops)",
    }
    for cpu, n in cpus:
        pk = peaks[cpu]
        w("| %s (`%s`) | %s | %s | %s | %s | %s | %s | %s |" % (
            n, cpu, stands.get(cpu, ""), fmt(pk["sdot"], 2), fmt(pk["usmmla"], 2),
            fmt(pk["fmla"], 2), fmt(pk["fmla_vec"], 2), fmt(pk["fmla_h"], 2), fmt(pk["ldq"], 2)))
    a76 = peaks["cortex-a76"]
    w("| (`cortex-a76`, not used) | LLVM's model of the A76 | %s | %s | %s | %s | %s | %s |" % (
        fmt(a76["sdot"], 2), fmt(a76["usmmla"], 2), fmt(a76["fmla"], 2), fmt(a76["fmla_vec"], 2),
        fmt(a76["fmla_h"], 2), fmt(a76["ldq"], 2)))
    w("")
    same = all(results[s["id"]]["mca"]["apple-m1"].get("cycles") == results[s["id"]]["mca"]["apple-m2"].get("cycles")
               for s in OURS if "error" not in results[s["id"]] and "cycles" in results[s["id"]]["mca"]["apple-m1"])
    w("`apple-m1` gives %s cycles as `apple-m2` for every loop it can run (checked by the script)." %
      ("the same" if same else "DIFFERENT"))
    w("Hardware for comparison: Arm's software optimization guides give the N1/A76 and the N2 "
      "two 128-bit SIMD pipes and the V1 and V2 four, each able to issue SDOT and FMLA, which the "
      "models follow. For USMMLA the peaks are the models' (LLVM gives it SDOT's throughput on "
      "these cores); they were not checked against the guides here. Apple publishes no figures "
      "(public measurements credit M1/M2 with four 128-bit FMA pipes); LLVM's Apple model, which "
      "the Apple column uses, has 3 for SDOT and FMLA by element and 2 for vector FMLA, so the "
      "Apple percentages are relative to that model, not to the chip.")
    w("")

    # Details.
    w("## Loops found")
    w("")
    w("Where each loop was found (function, basic blocks of the natural loop), what it holds, and "
      "llvm-mca's resource bound (Block RThroughput) beside the simulated cycles per iteration.")
    w("")
    w("| loop | function | blocks | insns | SDOT | MMLA | FMLA (lanes) | loads (bytes) | stores (bytes) | notes | cycles / RThroughput (" +
      ", ".join(n for _, n in cpus) + ") |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    allspecs = [(s, "qvl " + s["name"]) for s in OURS] + \
        ([(p, "llama.cpp " + p["name"]) for p in PEERS] if a.llama_src else [])
    for spec, label in allspecs:
        res = results.get(spec["id"], {"error": "not run"})
        if "error" in res:
            w("| %s | error: %s |||||||||| " % (label, res["error"]))
            continue
        f = res["found"]
        c = f.counts
        notes = []
        if f.variants > 1:
            notes.append("%d equal loops, first taken" % f.variants if spec["pick"] != "max-last"
                         else "%d equal loops, last taken" % f.variants)
        if f.nested:
            notes.append("holds %d inner loop(s), counted once" % len(f.nested))
        if f.dropped:
            notes.append("prefetch block left out")
        if f.has_prefetch:
            notes.append("with prefetch")
        if f.cond_branches > 1:
            notes.append("%d conditional branches" % f.cond_branches)
        cyc = []
        for cpu, _ in cpus:
            m = res["mca"][cpu]
            cyc.append("n/a" if "na" in m else "error" if "cycles" not in m else
                       "%s/%s" % (fmt(m["cycles"], 1), fmt(m["rthroughput"], 1)))
        w("| %s | `%s` | %d | %d | %d | %d | %d | %d (%d) | %d (%d) | %s | %s |" % (
            label, short(f.dem), len(f.blocks), c["insns"], c["n_dot"], c["n_mmla"],
            c["fmla_elem"] + c["fma_vec"], c["loads"], c["load_bytes"], c["stores"],
            c["store_bytes"], "; ".join(notes), ", ".join(cyc)))
    w("")
    w("## Assumptions")
    w("")
    w("- A loop's body is its natural loop's basic blocks in address order, each instruction "
      "once per iteration; branches inside count as instructions, not as control flow. The "
      "prefetch block of our tiles is left out of the GEMM rows (prefill past 256 rows does not "
      "prefetch) and kept in the decode rows.")
    w("- The loop taken is the innermost one holding the most (decode: the fewest, i.e. one x "
      "row) of the counted multiplies; work of an enclosing loop outside it is not counted.")
    w("- Work is counted from the instructions (SDOT 16 MACs, SMMLA/USMMLA 32, FMLA .4s 4 FMAs; "
      "elements from the bytes stored or loaded), so unrolling or splitting by the compiler "
      "changes the iteration, not the per-MAC figures.")
    w("- llvm-mca assumes every load hits L1 and every branch is predicted; memory bandwidth "
      "(the decode ceiling) is not in these figures (docs/arm-kernels.md).")
    w("- llama.cpp's loops are its NEON paths (SVE ones not measured); its Q4_0/Q8_0 blocks "
      "(32 weights + fp16 scale) match our q4/q8 strips' data per weight.")
    w("")
    text = "\n".join(L)
    if a.llama_src:
        text = text.replace(a.llama_src, "LLAMA_SRC")
    with open(a.out, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
