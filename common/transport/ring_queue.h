// A FIFO over a power-of-two ring that only grows: after warm-up, pushing and
// popping never allocate. Used for the in-order queues of both backends
// (posted operations, outstanding operations, finished completions).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace pandora::transport_detail {

template <typename T>
class RingQueue {
 public:
  explicit RingQueue(size_t initial_capacity = 64) {
    size_t cap = 1;
    while (cap < initial_capacity) cap <<= 1;
    slots_.resize(cap);
  }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  // i-th element from the front (0 = oldest).
  T& operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  const T& operator[](size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  T& front() { return (*this)[0]; }

  void push_back(const T& v) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = v;
    ++size_;
  }

  void pop_front() {
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }

  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  void grow() {
    std::vector<T> bigger(slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace pandora::transport_detail
