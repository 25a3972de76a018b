// The instruction set of one x86 kernel file: QVL_TARGET_ISA_BEGIN("avx2,fma") applies to the
// functions defined after it, QVL_TARGET_ISA_END (at the end of the file) stops it. Only those
// functions get the wider ISA: headers and templates come before BEGIN, so inline functions and
// template instantiations the linker may pick for every caller stay on the x86-64 baseline (a
// per-file -mavx512f would put AVX-512 into them, and an AVX2-only CPU would fault). GCC reads
// its target pragma; clang ignores that pragma and takes an attribute pushed onto every function.
#pragma once

#define QVL_TARGET_ISA_PRAGMA(text) _Pragma(#text)

// For a file whose kernels must round as the scalar references do: no fusing of their separate
// multiplies and adds (GCC's C++ default fuses across statements, clang's within one).
#if defined(__clang__)
#define QVL_NO_FP_CONTRACT QVL_TARGET_ISA_PRAGMA(clang fp contract(off))
#else
#define QVL_NO_FP_CONTRACT QVL_TARGET_ISA_PRAGMA(GCC optimize("fp-contract=off"))
#endif

#if defined(__clang__)
#define QVL_TARGET_ISA_BEGIN(isa) \
  QVL_TARGET_ISA_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define QVL_TARGET_ISA_END QVL_TARGET_ISA_PRAGMA(clang attribute pop)
#else
// To the end of the file, as before: wrapping it in push_options / pop_options changed GCC 12's
// register allocation in packed_gemv_avx2_quant.cpp, and the kernels stay as they were measured.
#define QVL_TARGET_ISA_BEGIN(isa) QVL_TARGET_ISA_PRAGMA(GCC target(isa))
#define QVL_TARGET_ISA_END
#endif

// The same for a region inside a file (tests that run the real instructions beside a model):
// QVL_TARGET_ISA_PUSH("avx2,fma") ... QVL_TARGET_ISA_POP.
#if defined(__clang__)
#define QVL_TARGET_ISA_PUSH(isa) QVL_TARGET_ISA_BEGIN(isa)
#define QVL_TARGET_ISA_POP QVL_TARGET_ISA_END
#else
#define QVL_TARGET_ISA_PUSH(isa) \
  QVL_TARGET_ISA_PRAGMA(GCC push_options) QVL_TARGET_ISA_PRAGMA(GCC target(isa))
#define QVL_TARGET_ISA_POP QVL_TARGET_ISA_PRAGMA(GCC pop_options)
#endif
