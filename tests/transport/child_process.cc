#include "tests/transport/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

namespace pandora::testing {

namespace {

ChildExit decode(int status) {
  ChildExit e;
  if (WIFEXITED(status)) {
    e.exited = true;
    e.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    e.signaled = true;
    e.signal = WTERMSIG(status);
  }
  return e;
}

}  // namespace

ChildProcess ChildProcess::run(const std::function<int()>& body) {
  // Buffered output would otherwise be written twice.
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 99;
    try {
      rc = body();
    } catch (...) {
      rc = 99;
    }
    std::fflush(nullptr);
    ::_exit(rc);
  }
  return ChildProcess(pid);
}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    kill_and_reap();
    pid_ = o.pid_;
    o.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() { kill_and_reap(); }

std::optional<ChildExit> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return decode(status);
    }
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void ChildProcess::kill_and_reap() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);  // a stopped child must be able to die
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace pandora::testing
