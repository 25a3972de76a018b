// Cache-line aligned, uninitialised-by-default array for activations and packed weights.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "base/mapped_file.h"

namespace qvl {

template <typename T>
class AlignedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "AlignedBuffer holds plain data only");

 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kHugePagesFrom = size_t{4} << 20;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t count) { resize(count); }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        capacity_(std::exchange(o.capacity_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Grows capacity when needed (contents are kept); never shrinks, so buffers can be reused.
  void resize(size_t count) {
    if (count > capacity_) {
      const size_t bytes = ((count * sizeof(T) + kAlignment - 1) / kAlignment) * kAlignment;
      T* fresh = static_cast<T*>(std::aligned_alloc(kAlignment, bytes));
      if (fresh == nullptr) throw std::bad_alloc();
      // Large buffers (activations of a prompt or an image, packed weights) on 2 MiB pages: a
      // fresh 4 MiB+ buffer otherwise costs a 4 KiB fault per page on first write (~4-8 us each
      // in a VM; an image's vision workspace is new per image).
      if (bytes >= kHugePagesFrom) advise_huge_pages(fresh, bytes);
      if (size_ > 0) std::memcpy(fresh, data_, size_ * sizeof(T));
      std::free(data_);
      data_ = fresh;
      capacity_ = count;
    }
    size_ = count;
  }
  void zero() {
    if (size_ > 0) std::memset(data_, 0, size_ * sizeof(T));
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace qvl
