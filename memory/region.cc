#include "memory/region.h"

#include <fcntl.h>
#include <libpmem.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "common/checksum.h"
#include "memory/exit_codes.h"

namespace pandora::memd {
namespace {

constexpr uint64_t kPage = 4096;
constexpr size_t kHeaderArea = 4096;  // [0, 4 KiB): must be all zero for --format

// "64M" when exact, else the byte count: messages quote sizes the way the
// flags take them.
std::string size_text(uint64_t bytes) {
  static constexpr struct {
    uint64_t unit;
    char suffix;
  } kUnits[] = {{1ull << 40, 'T'}, {1ull << 30, 'G'}, {1ull << 20, 'M'}, {1ull << 10, 'K'}};
  for (const auto& u : kUnits) {
    if (bytes != 0 && bytes % u.unit == 0) return fmt::format("{}{}", bytes / u.unit, u.suffix);
  }
  return fmt::format("{} bytes", bytes);
}

RegionError fail(RegionFailure f, std::string message) { return RegionError{f, std::move(message)}; }

std::string errno_text(int err) { return std::string(strerror(err)); }

uint64_t now_realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Writes a fresh control area (header, state, fence bitmap, reserved) into a
// mapping of `size` bytes and persists it. The header is written last and
// persisted separately so that a torn format never looks like a valid region.
void write_control_area(uint8_t* base, bool is_pmem, const RegionHeader& h) {
  auto persist = [&](const void* p, size_t n) {
    if (is_pmem) pmem_persist(p, n);
    else pmem_msync(p, n);
  };
  std::memset(base + kRegionStateOffset, 0, kDataOffset - kRegionStateOffset);
  RegionState st{};
  st.state = kStateClean;
  std::memcpy(base + kRegionStateOffset, &st, sizeof(st));
  persist(base + kRegionStateOffset, kDataOffset - kRegionStateOffset);
  std::memset(base, 0, kHeaderArea);
  std::memcpy(base, &h, sizeof(h));
  persist(base, kHeaderArea);
}

// An exclusive advisory lock on the region file for the daemon's lifetime:
// two daemons serving one region would each believe they own the fence
// bitmap and the state marker. Released automatically when the process dies.
bool lock_region_fd(int fd, const std::string& path, RegionError* error) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
  int e = errno;
  if (e == EWOULDBLOCK) {
    *error = fail(RegionFailure::kIo, fmt::format("region file {} is in use by another pandora-memd (it holds "
                                                  "the file lock); stop that daemon or use another --pm-path",
                                                  path));
  } else {
    *error = fail(RegionFailure::kIo, fmt::format("cannot lock region file {}: {}", path, errno_text(e)));
  }
  return false;
}

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

void fsync_parent_dir(const std::string& path) {
  int fd = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// "1000 (alice)", or just the number when the user has no name.
std::string user_text(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != nullptr) {
    return fmt::format("{} ({})", uid, found->pw_name);
  }
  return std::to_string(uid);
}

// Why `st` (of `what` at `path`) is unsafe for a region, or "" when it is
// safe. See check_region_permissions() in region.h for the rule.
std::string unsafe_reason(const char* what, const std::string& path, const struct stat& st, uid_t euid) {
  const bool owner_ok = st.st_uid == euid || st.st_uid == 0;
  const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  const bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
  if (owner_ok && (!others_write || sticky_dir)) return {};
  std::string why = !owner_ok ? fmt::format("is owned by user {}, not by this daemon's user {}", user_text(st.st_uid),
                                            user_text(euid))
                              : std::string(S_ISDIR(st.st_mode) ? "is writable by group or others and not sticky"
                                                                : "is writable by group or others");
  return fmt::format("{} {} {} (owner {}, mode {:04o})", what, path, why, user_text(st.st_uid),
                     st.st_mode & 07777);
}

// Turns ENOSPC/EFBIG into the "disk full" wording the README promises.
std::string space_error(int e, const std::string& path, uint64_t bytes) {
  if (e == ENOSPC || e == EDQUOT) {
    return fmt::format("disk full: cannot allocate {} for region {}: {}; free space on its file system or choose "
                       "a smaller --size", size_text(bytes), path, errno_text(e));
  }
  if (e == EFBIG) {
    return fmt::format("disk full: cannot allocate {} for region {}: {} (the file size limit, ulimit -f, or the "
                       "file system's maximum file size is smaller)", size_text(bytes), path, errno_text(e));
  }
  return fmt::format("cannot allocate {} for region {}: {}", size_text(bytes), path, errno_text(e));
}

// Makes sure every block of [0, bytes) of the regular file `fd` is
// allocated, so that no later store into the mapping can hit a hole on a
// full file system (SIGBUS). Allocating keeps the file's content. Files
// that report all their blocks allocated are left alone (cheap).
bool allocate(int fd, const struct stat& st, uint64_t bytes, const std::string& path, RegionError* error) {
  if (!S_ISREG(st.st_mode)) return true;  // DAX devices have no holes
  if (static_cast<uint64_t>(st.st_size) >= bytes && static_cast<uint64_t>(st.st_blocks) * 512 >= bytes) {
    return true;
  }
  int e = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (e == 0) return true;
  *error = fail(RegionFailure::kIo, space_error(e, path, bytes));
  return false;
}

// Whether anything after the first 4 KiB is non-zero: read through the
// mapping for a DAX device (`map`), else from the file, skipping holes.
bool nonzero_after_header(int fd, const uint8_t* map, uint64_t size) {
  if (map != nullptr) return size > kHeaderArea && !all_zero(map + kHeaderArea, size - kHeaderArea);
  std::vector<uint8_t> buf(1 << 20);
  off_t at = static_cast<off_t>(kHeaderArea);
  while (static_cast<uint64_t>(at) < size) {
    off_t data = ::lseek(fd, at, SEEK_DATA);
    if (data < 0) return false;  // ENXIO: only holes up to the end
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) hole = static_cast<off_t>(size);
    for (off_t off = data; off < hole;) {
      ssize_t n = ::pread(fd, buf.data(), std::min<size_t>(buf.size(), static_cast<size_t>(hole - off)), off);
      if (n <= 0) return true;  // unreadable: assume something is there
      if (!all_zero(buf.data(), static_cast<size_t>(n))) return true;
      off += n;
    }
    at = hole;
  }
  return false;
}

// The error for a file whose first 4 KiB are all zero. With data behind
// them, that is a region whose header was zeroed or lost: --format would
// erase what may be intact, so nothing destructive is suggested. Only a
// file that is zero throughout is a blank one to format.
RegionError zeroed_header_error(const std::string& path, bool data_behind) {
  if (data_behind) {
    return fail(RegionFailure::kCorruptHeader,
                fmt::format("region {}: the header (first 4K) is all zero - zeroed, lost or unreadable - but the "
                            "file holds data after it, which may be intact. Not starting and not changing the file: "
                            "keep a copy of it, then restore the region from a replica or a backup",
                            path));
  }
  return fail(RegionFailure::kNotARegion,
              fmt::format("{} exists but is blank (all zero, e.g. a fresh DAX device or a pre-allocated file): it "
                          "is not a region yet. Rerun with --format to make the whole file a region, or remove it "
                          "and pass --size to create one",
                          path));
}

// Maps the open region file `fd` whole with PMDK. Going through
// /proc/self/fd keeps PMDK's choices (MAP_SYNC, device-DAX alignment, the
// is_pmem verdict) while binding the mapping to the inode we opened and
// validated, never to whatever the path names by now.
void* map_fd(int fd, size_t* mapped, int* is_pmem) {
  return pmem_map_file(fmt::format("/proc/self/fd/{}", fd).c_str(), 0, 0, 0, mapped, is_pmem);
}

}  // namespace

int exit_code_for(RegionFailure failure) {
  switch (failure) {
    case RegionFailure::kNone: return kExitOk;
    case RegionFailure::kUsage: return kExitUsage;
    case RegionFailure::kNotARegion: return kExitNotARegion;
    case RegionFailure::kCorruptHeader: return kExitCorruptHeader;
    case RegionFailure::kLayoutVersion: return kExitLayoutVersion;
    case RegionFailure::kWrongCluster: return kExitWrongCluster;
    case RegionFailure::kWrongNode: return kExitWrongNode;
    case RegionFailure::kSizeMismatch: return kExitSizeMismatch;
    case RegionFailure::kIo: return kExitIo;
    case RegionFailure::kUnsafePermissions: return kExitUnsafePermissions;
  }
  return kExitIo;
}

uint64_t header_checksum(const RegionHeader& h) {
  return crc32c(&h, offsetof(RegionHeader, checksum));
}

RegionHeader make_header(uint64_t size, uint64_t log_size, uint64_t cluster_id, uint32_t node_id,
                         uint64_t format_time_ns) {
  RegionHeader h{};
  h.magic = kRegionMagic;
  h.layout_version = kRegionLayoutVersion;
  h.header_size = sizeof(RegionHeader);
  h.region_size = size;
  h.cluster_id = cluster_id;
  h.node_id = node_id;
  h.fence_offset = kFenceBitmapOffset;
  h.fence_bytes = kFenceBitmapBytes;
  h.data_offset = kDataOffset;
  h.table_offset = kDataOffset;
  h.log_offset = size - log_size;
  h.log_size = log_size;
  h.format_time_ns = format_time_ns;
  h.checksum = header_checksum(h);
  return h;
}

RegionError check_new_region_geometry(uint64_t size, uint64_t log_size) {
  if (size < kMinRegionSize) {
    return fail(RegionFailure::kUsage, fmt::format("--size {} is too small: a region needs at least {}",
                                                   size_text(size), size_text(kMinRegionSize)));
  }
  if (size % kPage != 0) {
    return fail(RegionFailure::kUsage,
                fmt::format("--size {} is not a multiple of 4K; give a page-aligned size such as 64M", size));
  }
  if (log_size == 0 || log_size % kPage != 0) {
    return fail(RegionFailure::kUsage,
                fmt::format("--log-size {} must be a non-zero multiple of 4K (e.g. 16M)", size_text(log_size)));
  }
  if (log_size >= size || size - log_size <= kDataOffset) {
    return fail(RegionFailure::kUsage,
                fmt::format("--log-size {} leaves no table area in a {} region (the first {} are reserved): "
                            "use a smaller --log-size or a larger --size",
                            size_text(log_size), size_text(size), size_text(kDataOffset)));
  }
  return {};
}

RegionError validate_header(const RegionHeader& h, uint64_t file_size, const RegionOptions& opts) {
  const std::string& path = opts.path;
  if (h.magic != kRegionMagic) {
    // A damaged magic in an otherwise intact header is corruption, not a
    // foreign file: check the checksum as if the magic were right.
    RegionHeader fixed = h;
    fixed.magic = kRegionMagic;
    if (header_checksum(fixed) == h.checksum) {
      return fail(RegionFailure::kCorruptHeader,
                  fmt::format("region {}: the header magic is damaged (found {:#018x}) but the rest of the header "
                              "is intact; the region cannot be trusted: restore it from a replica or remove it",
                              path, h.magic));
    }
    return fail(RegionFailure::kNotARegion,
                fmt::format("{} is not a Pandora region (no PANDORA1 magic at offset 0); refusing to touch it: "
                            "check --pm-path", path));
  }
  uint64_t sum = header_checksum(h);
  if (sum != h.checksum) {
    return fail(RegionFailure::kCorruptHeader,
                fmt::format("region {}: header checksum mismatch (stored {:#x}, computed {:#x}); the header is "
                            "damaged: restore the region from a replica or remove the file to start empty",
                            path, h.checksum, sum));
  }
  if (h.layout_version != kRegionLayoutVersion) {
    return fail(RegionFailure::kLayoutVersion,
                fmt::format("region {} has layout version {} but this pandora-memd understands version {}: run "
                            "the pandora-memd release that formatted it", path, h.layout_version,
                            kRegionLayoutVersion));
  }
  if (h.cluster_id != opts.cluster_id) {
    return fail(RegionFailure::kWrongCluster,
                fmt::format("region {} belongs to cluster {:#x} but --cluster-id is {:#x}: fix --cluster-id or "
                            "--pm-path", path, h.cluster_id, opts.cluster_id));
  }
  if (h.node_id != opts.node_id) {
    return fail(RegionFailure::kWrongNode,
                fmt::format("region {} belongs to memory node {} but --node-id is {}: fix --node-id or --pm-path",
                            path, h.node_id, opts.node_id));
  }
  if (opts.size && *opts.size != h.region_size) {
    return fail(RegionFailure::kSizeMismatch,
                fmt::format("--size {} does not match region {} of {} ({} bytes); a region cannot be resized: "
                            "omit --size or give {}", size_text(*opts.size), path, size_text(h.region_size),
                            h.region_size, size_text(h.region_size)));
  }
  if (file_size != h.region_size) {
    return fail(RegionFailure::kSizeMismatch,
                fmt::format("region {} is {} bytes on disk but its header says {} bytes: the file was truncated "
                            "or extended; restore it from a replica", path, file_size, h.region_size));
  }
  if (opts.log_size_given && opts.log_size != h.log_size) {
    return fail(RegionFailure::kSizeMismatch,
                fmt::format("--log-size {} does not match region {} whose log area is {}: omit --log-size or "
                            "give {}", size_text(opts.log_size), path, size_text(h.log_size),
                            size_text(h.log_size)));
  }
  std::string why;
  if (h.header_size != sizeof(RegionHeader)) why = fmt::format("header_size {}", h.header_size);
  else if (h.region_size < kMinRegionSize) why = fmt::format("region_size {}", h.region_size);
  else if (h.fence_offset != kFenceBitmapOffset || h.fence_bytes != kFenceBitmapBytes)
    why = fmt::format("fence bitmap at {:#x}+{}", h.fence_offset, h.fence_bytes);
  else if (h.data_offset != kDataOffset || h.table_offset != h.data_offset)
    why = fmt::format("data offset {:#x}, table offset {:#x}", h.data_offset, h.table_offset);
  else if (h.log_offset <= h.data_offset || h.log_offset % 64 != 0 || h.log_size > h.region_size ||
           h.log_offset != h.region_size - h.log_size)
    why = fmt::format("log area at {:#x}+{}", h.log_offset, h.log_size);
  if (!why.empty()) {
    return fail(RegionFailure::kCorruptHeader,
                fmt::format("region {}: header layout fields are inconsistent ({}) although the checksum matches; "
                            "the region cannot be used: restore it from a replica", path, why));
  }
  return {};
}

RegionError check_region_permissions(const std::string& real_path, const struct stat* file_st, uid_t euid) {
  std::vector<std::string> problems;
  if (file_st != nullptr) {
    if (std::string why = unsafe_reason("region file", real_path, *file_st, euid); !why.empty()) {
      problems.push_back(std::move(why));
    }
  }
  // Every directory from the file's own up to "/": whoever may rename an
  // entry anywhere on the way can put another file at this path.
  for (std::string dir = parent_dir(real_path);; dir = parent_dir(dir)) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      problems.push_back(fmt::format("cannot stat directory {}: {}", dir, errno_text(errno)));
    } else if (std::string why = unsafe_reason("directory", dir, st, euid); !why.empty()) {
      problems.push_back(std::move(why));
    }
    if (dir == "/" || dir == ".") break;
  }
  if (problems.empty()) return {};
  std::string text;
  for (const auto& p : problems) text += (text.empty() ? "" : "; ") + p;
  return fail(RegionFailure::kUnsafePermissions,
              fmt::format("refusing region {}: {}. Another user could read and change every balance and set fence "
                          "bits, or swap in a file of their own. Fix the owner and mode (chown, chmod go-w) or move "
                          "the region to a directory only this user can write; --allow-unsafe-region-permissions "
                          "starts anyway (not recommended)",
                          real_path, text));
}

namespace {

// Applies check_region_permissions: an error unless the operator allowed
// unsafe permissions, in which case it is logged as a warning.
bool permissions_acceptable(const RegionOptions& opts, const std::string& real_path, const struct stat* file_st,
                            const Logger& log, RegionError* error) {
  RegionError p = check_region_permissions(real_path, file_st, ::geteuid());
  if (p.failure == RegionFailure::kNone) return true;
  if (opts.allow_unsafe_permissions) {
    log.warn("--allow-unsafe-region-permissions: starting anyway: {}", p.message);
    return true;
  }
  *error = p;
  return false;
}

std::string resolved_path(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : std::string();
}

}  // namespace

std::unique_ptr<Region> Region::open(const RegionOptions& opts, const Logger& log, RegionError* error) {
  *error = {};
  std::unique_ptr<Region> r(new Region());
  // Open first, then judge what was opened (fstat): checking a path and then
  // opening it would leave a window to swap the file in between.
  int fd = ::open(opts.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT) {
    int e = errno;
    *error = fail(RegionFailure::kIo, fmt::format("cannot open region file {}: {}; check --pm-path and its "
                                                  "permissions (the daemon needs read-write access)",
                                                  opts.path, errno_text(e)));
    return nullptr;
  }

  if (fd < 0) {
    // ---- create ----------------------------------------------------------
    if (!opts.size) {
      *error = fail(RegionFailure::kUsage, fmt::format("region {} does not exist; --size is required to create it "
                                                       "(e.g. --size 1G)", opts.path));
      return nullptr;
    }
    RegionError g = check_new_region_geometry(*opts.size, opts.log_size);
    if (g.failure != RegionFailure::kNone) {
      *error = g;
      return nullptr;
    }
    const std::string dir = resolved_path(parent_dir(opts.path));
    if (dir.empty()) {
      int e = errno;
      *error = fail(RegionFailure::kIo, fmt::format("cannot create region file {}: its directory {}: {}", opts.path,
                                                    parent_dir(opts.path), errno_text(e)));
      return nullptr;
    }
    const std::string base_name = opts.path.substr(opts.path.rfind('/') + 1);
    if (!permissions_acceptable(opts, dir + "/" + base_name, nullptr, log, error)) return nullptr;
    // An unpredictable temporary name, created with O_EXCL (mkostemp never
    // follows a symlink planted at the name), in the target's directory so
    // that link() below is atomic.
    std::string tmp = fmt::format("{}.formatting.XXXXXX", opts.path);
    fd = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      *error = fail(RegionFailure::kIo, fmt::format("cannot create region file {} ({}): {}; check the directory "
                                                    "exists and is writable", opts.path, tmp, errno_text(e)));
      return nullptr;
    }
    r->fd_ = fd;
    // Every failure from here on removes the temporary file.
    auto give_up = [&](RegionError e) -> std::unique_ptr<Region> {
      ::unlink(tmp.c_str());
      *error = std::move(e);
      return nullptr;
    };
    struct stat st {};
    ::fstat(fd, &st);
    // Not sparse: allocating now turns "disk full" (ENOSPC, or EFBIG under
    // ulimit -f: the daemon ignores SIGXFSZ) into a start-up error instead
    // of a SIGBUS on a later store.
    RegionError alloc;
    if (!allocate(fd, st, *opts.size, opts.path, &alloc)) return give_up(alloc);
    size_t mapped = 0;
    int is_pmem = 0;
    void* p = map_fd(fd, &mapped, &is_pmem);
    if (p == nullptr) {
      return give_up(fail(RegionFailure::kIo, fmt::format("cannot map new region file {} ({}): {}", opts.path, tmp,
                                                          pmem_errormsg())));
    }
    r->base_ = static_cast<uint8_t*>(p);
    r->mapped_len_ = mapped;
    RegionHeader h = make_header(*opts.size, opts.log_size, opts.cluster_id, opts.node_id, now_realtime_ns());
    write_control_area(r->base_, is_pmem != 0, h);
    // Lock the new inode before it gets its final name, so no second daemon
    // can slip in between link() and the lock.
    RegionError lock_error;
    if (!lock_region_fd(fd, tmp, &lock_error)) return give_up(lock_error);
    // The data is durable (persisted above); make the allocation and then
    // the name durable before the region counts as created.
    ::fsync(fd);
    // link(2) fails if the name exists (also as a dangling symlink), which
    // gives O_EXCL semantics for the final name.
    if (::link(tmp.c_str(), opts.path.c_str()) != 0) {
      int e = errno;
      return give_up(fail(RegionFailure::kIo, fmt::format("cannot create region file {}: {}{}", opts.path,
                                                          errno_text(e), e == EEXIST ? " (another process created "
                                                          "it at the same time)" : "")));
    }
    ::unlink(tmp.c_str());
    fsync_parent_dir(opts.path);
    r->size_ = *opts.size;
    r->is_pmem_ = is_pmem != 0;
    r->created_ = true;
    r->header_ = h;
    log.info("created region {} ({}, log area {}, cluster {:#x}, node {})", opts.path, size_text(h.region_size),
             size_text(h.log_size), h.cluster_id, h.node_id);
  } else {
    // ---- open existing: validate before writing anything -----------------
    r->fd_ = fd;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int e = errno;
      *error = fail(RegionFailure::kIo, fmt::format("cannot stat region file {}: {}", opts.path, errno_text(e)));
      return nullptr;
    }
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
      *error = fail(RegionFailure::kNotARegion, fmt::format("--pm-path {} is neither a file nor a DAX device",
                                                            opts.path));
      return nullptr;
    }
    // The directories checked must lead to the inode we opened.
    const std::string real = resolved_path(opts.path);
    struct stat again {};
    if (real.empty() || ::stat(real.c_str(), &again) != 0 || again.st_dev != st.st_dev ||
        again.st_ino != st.st_ino) {
      *error = fail(RegionFailure::kIo, fmt::format("region file {} changed while it was being opened (renamed or "
                                                    "replaced); is someone else managing this directory?",
                                                    opts.path));
      return nullptr;
    }
    if (!permissions_acceptable(opts, real, &st, log, error)) return nullptr;
    if (!lock_region_fd(fd, opts.path, error)) return nullptr;

    uint8_t head[kHeaderArea] = {};
    uint64_t file_size = 0;
    void* p = nullptr;
    size_t mapped = 0;
    int is_pmem = 0;
    if (S_ISREG(st.st_mode)) {
      // Plain read: validating must work even for a file too small to map.
      file_size = static_cast<uint64_t>(st.st_size);
      size_t want = static_cast<size_t>(std::min<uint64_t>(file_size, kHeaderArea));
      ssize_t got = ::pread(fd, head, want, 0);
      if (got != static_cast<ssize_t>(want)) {
        *error = fail(RegionFailure::kIo, fmt::format("cannot read the header of {}: {}", opts.path,
                                                      got < 0 ? errno_text(errno) : "short read"));
        return nullptr;
      }
    } else {
      // Device DAX supports no read(2): map first (mapping writes nothing).
      p = map_fd(fd, &mapped, &is_pmem);
      if (p == nullptr) {
        *error = fail(RegionFailure::kIo, fmt::format("cannot map {}: {}", opts.path, pmem_errormsg()));
        return nullptr;
      }
      r->base_ = static_cast<uint8_t*>(p);
      r->mapped_len_ = mapped;
      file_size = mapped;
      std::memcpy(head, p, std::min<size_t>(mapped, kHeaderArea));
    }

    RegionHeader h{};
    std::memcpy(&h, head, sizeof(h));
    bool format = false;
    if (all_zero(head, kHeaderArea)) {
      if (!opts.format_zeroed) {
        *error = zeroed_header_error(opts.path, nonzero_after_header(fd, r->base_, file_size));
        return nullptr;
      }
      if (opts.size && *opts.size != file_size) {
        *error = fail(RegionFailure::kSizeMismatch,
                      fmt::format("--format: --size {} differs from the size of {} ({} bytes); --format uses the "
                                  "whole file: omit --size", size_text(*opts.size), opts.path, file_size));
        return nullptr;
      }
      RegionError g = check_new_region_geometry(file_size, opts.log_size);
      if (g.failure != RegionFailure::kNone) {
        if (g.failure == RegionFailure::kUsage && file_size < kMinRegionSize) g.failure = RegionFailure::kSizeMismatch;
        g.message = fmt::format("--format {}: {}", opts.path, g.message);
        *error = g;
        return nullptr;
      }
      format = true;
      h = make_header(file_size, opts.log_size, opts.cluster_id, opts.node_id, now_realtime_ns());
    } else {
      if (file_size < sizeof(RegionHeader)) {
        *error = fail(RegionFailure::kNotARegion, fmt::format("{} ({} bytes) is too small to be a Pandora region; "
                                                              "check --pm-path", opts.path, file_size));
        return nullptr;
      }
      RegionError v = validate_header(h, file_size, opts);
      if (v.failure != RegionFailure::kNone) {
        *error = v;
        return nullptr;
      }
    }

    // A region copied as a sparse file, or a sparse file to format, has
    // holes: a store into one on a full file system is a SIGBUS. Allocate
    // them now (the content stays as it is).
    if (!allocate(fd, st, file_size, opts.path, error)) return nullptr;
    if (p == nullptr) {
      p = map_fd(fd, &mapped, &is_pmem);
      if (p == nullptr) {
        *error = fail(RegionFailure::kIo, fmt::format("cannot map region {}: {}; check permissions (the daemon "
                                                      "needs read-write access)", opts.path, pmem_errormsg()));
        return nullptr;
      }
      r->base_ = static_cast<uint8_t*>(p);
      r->mapped_len_ = mapped;
    }
    if (mapped < h.region_size) {
      *error = fail(RegionFailure::kSizeMismatch, fmt::format("region {}: mapped {} bytes but the header says {}",
                                                              opts.path, mapped, h.region_size));
      return nullptr;
    }
    r->size_ = h.region_size;
    r->is_pmem_ = is_pmem != 0;
    r->header_ = h;
    if (format) {
      // Stale bytes from an earlier use of the device must not look like
      // latches or log records: clear everything, then write the header.
      log.info("formatting {} ({}): clearing the whole region", opts.path, size_text(file_size));
      if (r->is_pmem_) {
        pmem_memset_persist(r->base_ + kDataOffset, 0, h.region_size - kDataOffset);
      } else {
        std::memset(r->base_ + kDataOffset, 0, h.region_size - kDataOffset);
        pmem_msync(r->base_ + kDataOffset, h.region_size - kDataOffset);
      }
      write_control_area(r->base_, r->is_pmem_, h);
      r->created_ = true;
      log.info("formatted region {} ({}, log area {}, cluster {:#x}, node {})", opts.path,
               size_text(h.region_size), size_text(h.log_size), h.cluster_id, h.node_id);
    }
  }

  r->real_path_ = resolved_path(opts.path);
  if (r->real_path_.empty()) r->real_path_ = opts.path;
  struct stat st {};
  ::fstat(r->fd_, &st);
  r->device_ = static_cast<uint64_t>(st.st_dev);
  r->inode_ = static_cast<uint64_t>(st.st_ino);
  // Clients get their own open file description of the same inode (never
  // the path, and never ours: a client could otherwise flock(LOCK_UN) the
  // daemon's lock, which belongs to the description).
  r->client_fd_ = ::open(fmt::format("/proc/self/fd/{}", r->fd_).c_str(), O_RDWR | O_CLOEXEC);
  if (r->client_fd_ < 0) {
    int e = errno;
    *error = fail(RegionFailure::kIo, fmt::format("cannot reopen region {} for shm clients through /proc/self/fd: {}",
                                                  opts.path, errno_text(e)));
    return nullptr;
  }
  std::memcpy(&r->state_at_open_, r->base_ + kRegionStateOffset, sizeof(RegionState));
  r->log_ = log;
  return r;
}

Region::~Region() {
  if (base_ != nullptr) pmem_unmap(base_, mapped_len_);
  if (client_fd_ >= 0) ::close(client_fd_);
  if (fd_ >= 0) ::close(fd_);
}

wire::RegionInfo Region::info() const {
  wire::RegionInfo i;
  i.cluster_id = header_.cluster_id;
  i.node_id = header_.node_id;
  i.layout_version = header_.layout_version;
  i.region_size = header_.region_size;
  i.data_offset = header_.data_offset;
  i.table_offset = header_.table_offset;
  i.log_offset = header_.log_offset;
  i.log_size = header_.log_size;
  return i;
}

void Region::msync_or_die(uint64_t off, uint64_t len) const {
  if (pmem_msync(base_ + off, len) != 0) {
    // Acknowledging a write that is not durable would break the protocol's
    // recovery guarantees; stopping is the only honest answer.
    if (log_) log_->error("msync of region bytes [{:#x}, +{}) failed: {}; stopping", off, len, pmem_errormsg());
    std::abort();
  }
}

void Region::persist(uint64_t off, uint64_t len) const {
  if (is_pmem_) pmem_persist(base_ + off, len);
  else msync_or_die(off, len);
}

void Region::flush(uint64_t off, uint64_t len) const {
  if (is_pmem_) pmem_flush(base_ + off, len);
  else msync_or_die(off, len);
}

void Region::drain() const {
  if (is_pmem_) pmem_drain();
}

void Region::copy_nodrain(uint64_t off, const void* src, uint64_t len) const {
  if (is_pmem_) {
    pmem_memcpy_nodrain(base_ + off, src, len);
  } else {
    std::memcpy(base_ + off, src, len);
    msync_or_die(off, len);
  }
}

RegionState Region::state() const {
  RegionState s;
  std::memcpy(&s, base_ + kRegionStateOffset, sizeof(s));
  return s;
}

bool Region::mark_running() {
  RegionState s = state();
  bool unclean = s.state != kStateClean;
  if (unclean) ++s.unclean_starts;
  ++s.start_count;
  s.state = kStateRunning;
  s.last_start_ns = now_realtime_ns();
  std::memcpy(base_ + kRegionStateOffset, &s, sizeof(s));
  persist(kRegionStateOffset, sizeof(s));
  return unclean;
}

void Region::mark_clean() {
  RegionState s = state();
  s.state = kStateClean;
  std::memcpy(base_ + kRegionStateOffset, &s, sizeof(s));
  persist(kRegionStateOffset, sizeof(s));
}

}  // namespace pandora::memd
