// Formatted string content (JSON Schema "format") as small fixed-length automata: date
// (YYYY-MM-DD with real month lengths and leap years), time (HH:MM:SSZ), date-time
// (YYYY-MM-DDTHH:MM:SSZ) and uuid (8-4-4-4-12 hex digits). Each accepts a subset of the format's
// strings, so every output validates; the fixed length keeps completion distances exact.
#pragma once

#include <cstdint>

#include "grammar/grammar.h"

namespace qvl::grammar {

// Whether content byte `c` may come at position `pos` (0-based, < format_length). `memo` carries
// what earlier positions decided (year, month, ...); it starts at 0 and is updated on success.
bool format_accepts(StringFormat format, int pos, int32_t& memo, uint8_t c);

}  // namespace qvl::grammar
