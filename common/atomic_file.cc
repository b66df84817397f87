#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace pandora {

Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    return Status(Errc::kIo, fmt::format("cannot create a temporary file for {} in {}: {}", path, dir,
                                         std::strerror(errno)));
  }
  auto fail = [&](const char* what) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status(Errc::kIo, fmt::format("cannot write {}: {}: {}", path, what, std::strerror(e)));
  };
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return fail("write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, mode) != 0) return fail("fchmod");
  if (::fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Status(Errc::kIo, fmt::format("cannot write {}: close: {}", path, std::strerror(e)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Status(Errc::kIo, fmt::format("cannot write {}: rename: {}", path, std::strerror(e)));
  }
  // The rename itself must survive a crash too.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

}  // namespace pandora
