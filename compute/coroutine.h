// A stackful coroutine for coordinators: a Boost.Context fiber (the layer
// Boost.Coroutine2 is built on) plus the stack-switch annotations
// AddressSanitizer needs.
//
//   Coroutine co(256 * 1024, [&](Coroutine& self) { ...; self.suspend(); ... });
//   while (!co.finished()) co.resume();   // resume() rethrows what the body threw
//
// Why the wrapper: Debian's libboost_context uses the fcontext (assembly)
// switcher, which never tells ASan that the stack changed. ASan then takes
// the coroutine stack for a part of the thread's stack; the first exception
// thrown on it (or the forced unwind of a destroyed coroutine) makes ASan
// "ignore __asan_handle_no_return" and report false stack-buffer-overflows.
// Boost's own remedy (BOOST_USE_ASAN) exists only for its ucontext switcher
// and needs a libboost_context built for ucontext (Debian's is not: the
// symbols are missing at link time). So every switch this class makes is
// bracketed with __sanitizer_start_switch_fiber /
// __sanitizer_finish_switch_fiber (no-ops in builds without ASan).
// Boost.Coroutine2 cannot be annotated completely: destroying a coroutine -
// even a finished one - resumes it with a forced_unwind exception thrown
// inside Boost's switch code, where ASan still believes it is on the old
// stack ("ASan is ignoring requested __asan_handle_no_return", then false
// stack-buffer-overflow reports). A fiber whose function returns needs no
// unwind, and an unfinished one is cancelled cooperatively (~Coroutine).
// Stacks are protected_fixedsize_stack: a guard page turns an overflow into
// SIGSEGV.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>

namespace pandora {

class Coroutine {
 public:
  using Body = std::function<void(Coroutine&)>;

  // Creates the coroutine; the body starts at the first resume().
  Coroutine(size_t stack_bytes, Body body);
  // Unwinds a body that has not finished: its suspend() throws an internal
  // exception, so bodies must not swallow exceptions with catch (...) and
  // suspend again without rethrowing.
  ~Coroutine();
  Coroutine(const Coroutine&) = delete;
  Coroutine& operator=(const Coroutine&) = delete;

  // From outside: runs the body until it suspends or returns. Rethrows an
  // exception that escaped the body.
  void resume();
  // From the body: returns to resume()'s caller.
  void suspend();

  bool finished() const { return finished_; }

  // Stack bounds, filled in as switches happen (used by the annotations).
  struct Stacks {
    const void* coro_bottom = nullptr;
    size_t coro_size = 0;
    const void* main_bottom = nullptr;
    size_t main_size = 0;
    void* main_fake = nullptr;
    void* coro_fake = nullptr;
  };

 private:
  struct Impl;
  Stacks stacks_;
  bool finished_ = false;
  bool cancel_ = false;
  std::exception_ptr error_;
  Body body_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pandora
