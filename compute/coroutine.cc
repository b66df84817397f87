#include "compute/coroutine.h"

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PANDORA_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PANDORA_ASAN 1
#endif

#ifdef PANDORA_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace pandora {

namespace {

namespace ctx = boost::context;

// About to leave the current stack for [bottom, bottom+size); `fake` keeps
// the leaving side's fake stack (nullptr: the leaving side is finished).
inline void start_switch(void** fake, const void* bottom, size_t size) {
#ifdef PANDORA_ASAN
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

// Arrived on a stack; reports the stack we came from.
inline void finish_switch(void* fake, const void** from_bottom, size_t* from_size) {
#ifdef PANDORA_ASAN
  __sanitizer_finish_switch_fiber(fake, from_bottom, from_size);
#else
  (void)fake, (void)from_bottom, (void)from_size;
#endif
}

// A stack's memory is handed out clean of ASan poison: the frames that
// switch off a finished fiber never return, so their scope poison stays in
// the shadow after the stack is unmapped, and a later stack mapped at the
// same address would report a stack-use-after-scope on a fresh variable
// (seen in an application's transaction body).
inline void unpoison(const void* bottom, size_t size) {
#ifdef PANDORA_ASAN
  __asan_unpoison_memory_region(bottom, size);
#else
  (void)bottom, (void)size;
#endif
}

// protected_fixedsize_stack that remembers where the stack is.
class RecordingStack {
 public:
  RecordingStack(size_t size, Coroutine::Stacks* stacks) : inner_(size), stacks_(stacks) {}
  ctx::stack_context allocate() {
    ctx::stack_context sc = inner_.allocate();
    stacks_->coro_size = sc.size;
    stacks_->coro_bottom = static_cast<const char*>(sc.sp) - sc.size;
    unpoison(stacks_->coro_bottom, sc.size);
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    unpoison(static_cast<const char*>(sc.sp) - sc.size, sc.size);
    inner_.deallocate(sc);
  }

 private:
  ctx::protected_fixedsize_stack inner_;
  Coroutine::Stacks* stacks_;
};

// Thrown inside the body by suspend() when the coroutine is destroyed
// before finishing (see ~Coroutine).
struct Cancelled {};

}  // namespace

struct Coroutine::Impl {
  ctx::fiber coro;  // resumes the body (empty once it finished)
  ctx::fiber main;  // resumes resume()'s caller, while the body runs
};

Coroutine::Coroutine(size_t stack_bytes, Body body) : body_(std::move(body)), impl_(std::make_unique<Impl>()) {
  impl_->coro = ctx::fiber(std::allocator_arg, RecordingStack(stack_bytes, &stacks_), [this](ctx::fiber&& main) {
    impl_->main = std::move(main);
    finish_switch(nullptr, &stacks_.main_bottom, &stacks_.main_size);
    try {
      if (!cancel_) body_(*this);
    } catch (const Cancelled&) {
      // destroyed while suspended: the body's frames are unwound
    } catch (...) {
      error_ = std::current_exception();
    }
    finished_ = true;
    // Last switch: this stack is done (nullptr: no fake stack to keep).
    start_switch(nullptr, stacks_.main_bottom, stacks_.main_size);
    return std::move(impl_->main);
  });
}

// A fiber destroyed before its function returned is unwound by Boost with
// an exception thrown from inside the switch, before any annotation can run,
// which is exactly what confuses ASan (Boost.Coroutine2 even does this for
// finished coroutines, which is why this class uses fibers directly).
// Instead the body is resumed once more and suspend() throws Cancelled on
// the annotated stack; the body unwinds and returns normally.
Coroutine::~Coroutine() {
  if (!finished_) {
    cancel_ = true;
    try {
      resume();
    } catch (...) {
      // an exception escaping the body during cancellation is dropped
    }
  }
}

void Coroutine::resume() {
  if (finished_) return;
  start_switch(&stacks_.main_fake, stacks_.coro_bottom, stacks_.coro_size);
  impl_->coro = std::move(impl_->coro).resume();
  finish_switch(stacks_.main_fake, nullptr, nullptr);
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void Coroutine::suspend() {
  if (cancel_) throw Cancelled{};
  start_switch(&stacks_.coro_fake, stacks_.main_bottom, stacks_.main_size);
  impl_->main = std::move(impl_->main).resume();
  finish_switch(stacks_.coro_fake, &stacks_.main_bottom, &stacks_.main_size);
  if (cancel_) throw Cancelled{};
}

}  // namespace pandora
