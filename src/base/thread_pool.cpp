#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>

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

void ThreadPool::run_chunks() {
  for (;;) {
    size_t chunk, total;
    const std::function<void(size_t, size_t)>* job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_chunk_ >= chunks_total_) return;
      chunk = next_chunk_++;
      total = chunks_total_;
      job = job_;
    }
    const size_t begin = chunk * job_chunk_;
    const size_t end = std::min(job_n_, begin + job_chunk_);
    try {
      (*job)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    if (chunks_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == total) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (caller_sleeping_) done_.notify_all();
    }
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
    seen = generation_.load(std::memory_order_acquire);
    run_chunks();
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
  // A few chunks per thread balance uneven work without much hand-out overhead.
  const size_t threads = static_cast<size_t>(size());
  size_t chunk = std::max(grain, (n + threads * 4 - 1) / (threads * 4));
  const size_t total = (n + chunk - 1) / chunk;
  bool wake_sleepers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = chunk;
    next_chunk_ = 0;
    chunks_total_ = total;
    chunks_done_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
    wake_sleepers = sleeping_workers_ > 0;
  }
  if (wake_sleepers) wake_.notify_all();
  t_inside_pool = true;
  run_chunks();
  t_inside_pool = false;
  const auto finished = [&] { return chunks_done_.load(std::memory_order_acquire) == total; };
  std::exception_ptr error;
  {
    if (!spin_until(finished)) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_sleeping_ = true;
      done_.wait(lock, finished);
      caller_sleeping_ = false;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = nullptr;
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
