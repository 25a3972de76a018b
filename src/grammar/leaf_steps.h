// The byte steps of the leaf frames (literal alternatives, strings, numbers): each returns
// whether byte c continues the frame, updating it, and leaves the frame alone otherwise.
#pragma once

#include <cstdint>

#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace qvl::grammar {

// Literal frame: a = lo, b = hi (candidate range), c = bytes matched; tags filter object keys.
bool literal_finishable(const Node& n, const Frame& f);
bool literal_consume(const Node& n, Frame& f, uint8_t c);
// String frame: stage, a = pending UTF-8 continuation bytes, b = format position, c = memo.
bool string_consume(const Node& n, Frame& f, uint8_t c);
// Number frame: stage, a = digits of the current part.
bool number_consume(const Node& n, Frame& f, uint8_t c);

}  // namespace qvl::grammar
