#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "base/stage_profile.h"

namespace qvl {
namespace {
thread_local bool t_inside_pool = false;

// How long idle threads poll before sleeping: longer than the gap between two ops of a decode
// step, far shorter than the gap between requests.
constexpr auto kSpinTime = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls ready() for up to kSpinTime; true if it became true.
template <typename Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

std::unique_ptr<ThreadPool>& global_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
std::mutex g_global_mutex;
}  // namespace

int physical_core_count() {
  std::set<std::pair<std::string, std::string>> cores;
  const unsigned logical = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned cpu = 0; cpu < logical; ++cpu) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core(base + "core_id"), package(base + "physical_package_id");
    std::string core_id, package_id;
    if (!(core >> core_id) || !(package >> package_id)) return static_cast<int>(logical);
    cores.emplace(package_id, core_id);
  }
  return std::max<int>(1, static_cast<int>(cores.size()));
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = physical_core_count();
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {
// next_range_ packs the job's generation above the index (jobs are < 2^40 items).
constexpr int kIndexBits = 40;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr uint64_t kGenerationMask = (uint64_t{1} << (64 - kIndexBits)) - 1;

uint64_t range_word(unsigned generation, size_t index) {
  return (static_cast<uint64_t>(generation) & kGenerationMask) << kIndexBits | index;
}
}  // namespace

void ThreadPool::finish_range(size_t items) {
  const size_t n = job_n_.load();
  if (items_done_.fetch_add(items, std::memory_order_acq_rel) + items == n) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (caller_sleeping_) done_.notify_all();
  }
}

void ThreadPool::run_ranges(unsigned generation) {
  // Read after the generation (seq_cst): a job published later has already moved next_range_ to
  // its own generation, so the claims below fail rather than mix two jobs.
  const auto* job = job_.load();
  const size_t n = job_n_.load(), grain = job_grain_.load();
  const size_t share = 2 * static_cast<size_t>(size());
  uint64_t word = next_range_.load();
  for (;;) {
    if (word >> kIndexBits != (static_cast<uint64_t>(generation) & kGenerationMask)) return;
    const size_t begin = static_cast<size_t>(word & kIndexMask);
    if (begin >= n) return;
    const size_t end = std::min(n, begin + std::max(grain, (n - begin + share - 1) / share));
    if (!next_range_.compare_exchange_weak(word, range_word(generation, end))) continue;
    try {
      (*job)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    finish_range(end - begin);
    word = next_range_.load();
  }
}

void ThreadPool::worker_loop(int /*index*/) {
  t_inside_pool = true;
  unsigned seen = 0;
  for (;;) {
    const auto published = [&] {
      return stop_.load(std::memory_order_relaxed) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(published)) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleeping_workers_;
      wake_.wait(lock, published);
      --sleeping_workers_;
    }
    if (stop_.load()) return;
    seen = generation_.load();
    run_ranges(seen);
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn,
                              size_t grain) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  if (workers_.empty() || t_inside_pool || n <= grain) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> submit(submit_mutex_);
  dispatches_.fetch_add(1, std::memory_order_relaxed);
  profile::note_dispatch();
  const unsigned generation = generation_.load() + 1;
  bool wake_sleepers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Claims of the previous job fail from here on (see run_ranges), before its fields change.
    next_range_.store(range_word(generation, 0));
    job_.store(&fn);
    job_n_.store(n);
    job_grain_.store(grain);
    items_done_.store(0);
    error_ = nullptr;
    generation_.store(generation);
    wake_sleepers = sleeping_workers_ > 0;
  }
  if (wake_sleepers) wake_.notify_all();
  t_inside_pool = true;
  run_ranges(generation);
  t_inside_pool = false;
  const auto finished = [&] { return items_done_.load(std::memory_order_acquire) == n; };
  std::exception_ptr error;
  {
    if (!spin_until(finished)) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_sleeping_ = true;
      done_.wait(lock, finished);
      caller_sleeping_ = false;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

ThreadPool& ThreadPool::global() {
  std::lock_guard<std::mutex> lock(g_global_mutex);
  auto& slot = global_slot();
  if (!slot) slot = std::make_unique<ThreadPool>(0);
  return *slot;
}

void ThreadPool::set_global_threads(int threads) {
  std::lock_guard<std::mutex> lock(g_global_mutex);
  global_slot() = std::make_unique<ThreadPool>(threads);
}

}  // namespace qvl
