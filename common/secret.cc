#include "common/secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace pandora {
namespace {

// Closes the descriptor on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status io_error(const std::string& path, const char* what, int err) {
  return Status(Errc::kIo, fmt::format("secret file '{}': {}: {}", path, what, std::strerror(err)));
}

}  // namespace

Result<std::string> read_secret_file(const std::string& path) {
  if (path.empty()) return Status(Errc::kInvalidArgument, "no secret file given");
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error(path, "cannot open", errno);

  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return io_error(path, "cannot stat", errno);
  // Pipes are accepted (`--secret-file <(vault read ...)`); their mode bits
  // say nothing about who can read the secret, so only files are checked.
  // Refused rather than warned about: a warning in a log nobody reads left
  // clusters joinable by every local user.
  if (S_ISREG(st.st_mode) && (st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("secret file '{}' is readable by {} (mode {:04o}); anyone who can read it can join "
                              "the cluster: restrict it with chmod 600",
                              path, (st.st_mode & S_IROTH) != 0 ? "all users" : "its group", st.st_mode & 07777));
  }
  // Whoever owns or may write the file chooses the secret: a file planted
  // in a shared directory (a predictable /tmp path made before the
  // cluster's scripts ran) would give its planter the cluster.
  if (S_ISREG(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("secret file '{}' is writable by {} (mode {:04o}); anyone who can write it chooses the "
                              "cluster's secret: restrict it with chmod 600",
                              path, (st.st_mode & S_IWOTH) != 0 ? "all users" : "its group", st.st_mode & 07777));
  }
  if (S_ISREG(st.st_mode) && st.st_uid != ::geteuid()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("secret file '{}' belongs to uid {}, not to this user (uid {}); its owner can change "
                              "the cluster's secret: use a secret file of your own",
                              path, st.st_uid, ::geteuid()));
  }

  // Read one newline and one byte more than allowed, so "too long" is
  // detected without trusting st_size or reading an unbounded file.
  std::string content(kMaxSecretBytes + 2, '\0');
  size_t got = 0;
  while (got < content.size()) {
    const ssize_t n = ::read(fd.get(), content.data() + got, content.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(path, "cannot read", errno);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  content.resize(got);
  if (!content.empty() && content.back() == '\n') content.pop_back();

  if (content.empty()) {
    return Status(Errc::kInvalidArgument, fmt::format("secret file '{}' is empty; put the cluster secret in it", path));
  }
  if (content.size() < kMinSecretBytes) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("secret file '{}' holds {} bytes; a cluster secret needs at least {} (e.g. "
                              "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')",
                              path, content.size(), kMinSecretBytes));
  }
  if (content.size() > kMaxSecretBytes) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("secret file '{}' is longer than {} bytes; is it the right file?", path,
                              kMaxSecretBytes));
  }
  return content;
}

}  // namespace pandora
