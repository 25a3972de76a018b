// The vision tower's heap while it encodes an image stays within what its buffers need: the block
// activations, one row chunk of the wide projections, one attention call's packed keys/values and
// the mergers' outputs. Pixel values handed over are freed once embedded. The heap is counted by
// wrapping glibc's allocator in this test binary (every allocation, on every thread).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/vision_encoder.h"
#include "model/vision_weights.h"
#include "model/weight_types.h"

#if defined(__SANITIZE_ADDRESS__)
#define QVL_COUNT_HEAP 0  // the sanitizer owns malloc
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QVL_COUNT_HEAP 0
#endif
#endif
#if !defined(QVL_COUNT_HEAP) && defined(__GLIBC__)
#define QVL_COUNT_HEAP 1
#endif
#if !defined(QVL_COUNT_HEAP)
#define QVL_COUNT_HEAP 0
#endif

#if QVL_COUNT_HEAP
#include <malloc.h>

namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};

void* counted(void* p) {
  if (p != nullptr) {
    const int64_t now = g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) +
                        static_cast<int64_t>(malloc_usable_size(p));
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
  }
  return p;
}
void uncount(void* p) {
  if (p != nullptr) g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
}
}  // namespace

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  return counted(__libc_malloc(n));
}
void* calloc(size_t c, size_t n) {
  return counted(__libc_calloc(c, n));
}
void free(void* p) {
  uncount(p);
  __libc_free(p);
}
void* realloc(void* p, size_t n) {
  uncount(p);
  return counted(__libc_realloc(p, n));
}
void* memalign(size_t a, size_t n) {
  return counted(__libc_memalign(a, n));
}
void* aligned_alloc(size_t a, size_t n) {
  return counted(__libc_memalign(a, n));
}
int posix_memalign(void** out, size_t a, size_t n) {
  void* p = counted(__libc_memalign(a, n));
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}
#endif

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

TEST(VisionMemory, EncodeHoldsTheBlocksBuffersOneChunkAndOneAttentionCall) {
#if !QVL_COUNT_HEAP
  GTEST_SKIP() << "the heap is counted by wrapping glibc's malloc (not under a sanitizer)";
#else
  const ModelConfig config = load_model_config(kTiny);
  const WeightStore store = WeightStore::open_folder(kTiny);
  const VisionConfig& c = config.vision;
  const VisionWeights w = load_vision_weights(c, store, weight_types_for("q8"));
  const int64_t gh = 64, gw = 64, n = gh * gw, chunk = 256;
  const int64_t hid = c.hidden_size, hd = hid / c.num_heads;
  const int64_t dim = c.in_channels * c.temporal_patch_size * c.patch_size * c.patch_size;
  std::vector<float> pixels(static_cast<size_t>(n * dim));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& p : pixels) p = u(rng);
  const VisionEncoder encoder(c, w, chunk);
  const VisionOutput want = encoder.encode(pixels.data(), gh, gw);  // warms thread scratch up

  int64_t before = g_live.load();
  g_peak.store(before);
  const VisionOutput got = encoder.encode(pixels.data(), gh, gw);
  const int64_t held = g_peak.load() - before;
  EXPECT_EQ(got.embeds, want.embeds);
  EXPECT_EQ(got.deepstack, want.deepstack);

  // Handed over, the pixel values are gone by the first pause (after the first q/k/v).
  const int64_t pixel_bytes = static_cast<int64_t>(pixels.size() * sizeof(float));
  int64_t at_pause = -1;
  before = g_live.load();
  const VisionOutput moved = encoder.encode(std::move(pixels), gh, gw, {}, [&] {
    if (at_pause < 0) at_pause = g_live.load() - before;
  });
  EXPECT_EQ(moved.embeds, want.embeds);
  EXPECT_LT(at_pause, held - pixel_bytes / 2);

  // While the blocks run: x, a norm/attention output, q, k, v; one chunk of the widest
  // projection (qkv, or the MLP's fc1 + fc2 outputs); one attention call over its heads: the
  // output and the packed keys and values (keys padded to 64-row tiles); cos/sin; the mergers'
  // outputs and one chunk of a merger's (norm and fc1 outputs). 64 KiB of slack for the small
  // allocations. (The patch embedding before holds x and one chunk of frame-0 pixels: less.)
  const int64_t heads = encoder.attention_heads_per_call(n);
  const int64_t merged = c.spatial_merge_size * c.spatial_merge_size;
  const int64_t tokens = n / merged;
  const auto outputs = 1 + static_cast<int64_t>(c.deepstack_visual_indexes.size());
  const int64_t floats = 5 * n * hid + chunk * std::max(3 * hid, c.intermediate_size + hid) +
                         heads * hd * (n + 2 * (n + 64)) + n * hd +
                         outputs * tokens * c.out_hidden_size + 2 * chunk * hid;
  const int64_t bound = floats * 4 + (64 << 10);
  EXPECT_LE(held, bound) << heads << " heads per attention call";
  EXPECT_GT(held, 5 * n * hid * 4);  // the counter sees the blocks' buffers
  // With few threads, 64 row blocks per head keep them busy: one head per call.
  if (ThreadPool::global().size() <= 8) {
    EXPECT_EQ(heads, 1);
  }
  std::printf("encode of %lld patches held %lld bytes of heap (bound %lld)\n",
              static_cast<long long>(n), static_cast<long long>(held),
              static_cast<long long>(bound));
#endif
}

}  // namespace
}  // namespace qvl
