#include "engine/sequence.h"

namespace qvl {

uint64_t image_pad_key(uint64_t image_identity, int64_t row) {
  // The top bit keeps pad keys apart from token ids (below 2^32).
  uint64_t z = image_identity + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(row + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) | (1ull << 63);
}

}  // namespace qvl
