// Coefficients of 2^r on |r| <= 1/2 (ln2^k / k!, highest degree first; relative error ~1.5e-7),
// shared by the per-ISA softmax exponentials (elementwise_*_math.h). Plain constants only: the
// ISA translation units include this.
#pragma once

namespace qvl::ops {

inline constexpr float kExp2Polynomial[7] = {1.5403530393381606e-4f,
                                             1.3333558146428443e-3f,
                                             9.6181291076284772e-3f,
                                             5.5504108664821580e-2f,
                                             2.4022650695910071e-1f,
                                             6.9314718055994531e-1f,
                                             1.0f};

}  // namespace qvl::ops
