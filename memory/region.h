// The memory node's persistent region: one file (a DAX file on real PM, a
// /dev/shm or disk file elsewhere) mapped with PMDK, laid out as described in
// common/region_layout.h.
//
// Opening is conservative: an existing file is validated completely before a
// single byte of it is written, so a daemon started with the wrong flags
// (another cluster, another node id, another size) or on the wrong file
// leaves that file byte-identical and exits with a code from
// memory/exit_codes.h. Only after validation succeeds does open() update the
// RegionState (start counter, clean-shutdown marker).
//
// A new region is created under an unpredictable temporary name (mkostemp:
// O_EXCL, never following a planted symlink) in the target's directory,
// fully allocated (posix_fallocate: disk full is an error now, not a SIGBUS
// later), formatted, persisted and only then linked to its final name
// (link(2) fails if the name exists, which gives O_EXCL semantics), so a
// crash while formatting never leaves a half-formatted file under the
// configured path; every failure removes the temporary file. An existing
// file is opened once, judged by fstat (check_region_permissions) and
// mapped through that descriptor, never by its path again; its holes are
// allocated before it is mapped.
//
// Persistence: when PMDK reports the mapping as persistent memory (real DAX,
// or PMEM_IS_PMEM_FORCE=1), stores are made durable with cache-line flushes
// plus a drain (pmem_flush / pmem_drain); otherwise every persist is a
// pmem_msync of the touched pages, which is correct but slow.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/logger.h"
#include "common/region_layout.h"
#include "common/wire/control.h"

namespace pandora::memd {

// Why a region could not be opened; each maps to one exit code.
enum class RegionFailure : uint8_t {
  kNone = 0,
  kUsage,          // flags inconsistent with the request (e.g. --size missing on create)
  kNotARegion,     // the file exists but is not a Pandora region
  kCorruptHeader,  // header checksum or layout fields invalid
  kLayoutVersion,  // formatted by another layout version
  kWrongCluster,   // formatted for another cluster id
  kWrongNode,      // formatted for another memory-node id
  kSizeMismatch,   // --size / --log-size / file size disagree with the header
  kIo,             // an operating-system call failed (also disk full)
  kUnsafePermissions,  // the file or a directory above it is open to other users
};

// The memd exit code (memory/exit_codes.h) for a failure.
int exit_code_for(RegionFailure failure);

struct RegionError {
  RegionFailure failure = RegionFailure::kNone;
  std::string message;  // what is wrong and what to do about it
};

struct RegionOptions {
  std::string path;
  // Required to create; when set on an existing region it must match.
  std::optional<uint64_t> size;
  uint64_t log_size = kDefaultLogAreaSize;
  // Whether log_size was given explicitly; only then is it checked against an
  // existing region (the default must not make old regions unusable).
  bool log_size_given = false;
  uint64_t cluster_id = 0;
  uint32_t node_id = 0;
  // Format an existing file whose first 4 KiB are all zero (a fresh DAX
  // device or a pre-allocated file). Never formats a non-zero header.
  bool format_zeroed = false;
  // Start even when check_region_permissions() objects (logged as a
  // warning): --allow-unsafe-region-permissions.
  bool allow_unsafe_permissions = false;
};

// The permission rule for a region (`real_path`: absolute, symlinks
// resolved; `file_st`: the opened file, or nullptr when it is about to be
// created). Safe means that no user but the daemon's (`euid`) and root can
// change the region's content or what its path names:
//  * the file is owned by `euid` or root and is not writable by group or
//    others;
//  * every directory from the file's own up to "/" is owned by `euid` or
//    root and is either not writable by group or others, or sticky (+t, as
//    /tmp and /dev/shm): in a sticky directory others may add entries but
//    cannot rename or remove ours, and the file itself is checked above.
// Reading by others is not checked (shm clients get a file descriptor, so
// nobody needs to open the region by path; chmod 600 keeps the data private).
// kUnsafePermissions with a message naming each offending file or
// directory, its owner and its mode; kNone when safe.
RegionError check_region_permissions(const std::string& real_path, const struct stat* file_st, uid_t euid);

// Checks a header read from an existing file against what the daemon was
// started with. Pure (no I/O); `file_size` is the size of the file or device.
// Order: magic, checksum, layout version, cluster, node, sizes, offsets.
RegionError validate_header(const RegionHeader& h, uint64_t file_size, const RegionOptions& opts);

// Fills a fresh header (checksum included) for a region of `size` bytes.
RegionHeader make_header(uint64_t size, uint64_t log_size, uint64_t cluster_id, uint32_t node_id,
                         uint64_t format_time_ns);

// crc32c over the bytes of `h` before its checksum field.
uint64_t header_checksum(const RegionHeader& h);

// Validates sizes for a region about to be created (min size, alignment,
// non-empty table area). kNone when fine.
RegionError check_new_region_geometry(uint64_t size, uint64_t log_size);

class Region {
 public:
  // Opens (validating) or creates (formatting) the region. On failure returns
  // nullptr and fills *error; the file is then unchanged (or, for a failed
  // create, absent).
  static std::unique_ptr<Region> open(const RegionOptions& opts, const Logger& log, RegionError* error);

  ~Region();  // unmaps (without changing the state marker)
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  const RegionHeader& header() const { return header_; }
  uint64_t data_offset() const { return header_.data_offset; }
  bool is_pmem() const { return is_pmem_; }
  // Canonical absolute path of the region file (for messages).
  const std::string& real_path() const { return real_path_; }
  // A read-write descriptor of the region file for shm clients (its own open
  // file description, so a client cannot release the daemon's lock). Owned
  // by the Region; send it, never close it.
  int client_fd() const { return client_fd_; }
  // st_dev and st_ino of the region file: what shm clients verify.
  uint64_t device() const { return device_; }
  uint64_t inode() const { return inode_; }
  // Whether open() created and formatted the file.
  bool created() const { return created_; }

  wire::RegionInfo info() const;

  // The 8-byte word at region offset `off` (must be 8-byte aligned).
  uint64_t* word(uint64_t off) const { return reinterpret_cast<uint64_t*>(base_ + off); }

  // Makes [off, off+len) durable now.
  void persist(uint64_t off, uint64_t len) const;
  // Starts making [off, off+len) durable; complete with drain(). Without PM
  // this is a synchronous msync, and drain() is a no-op.
  void flush(uint64_t off, uint64_t len) const;
  void drain() const;
  // Copies and flushes (non-temporal stores where PMDK prefers them); the
  // copy is durable after the next drain().
  void copy_nodrain(uint64_t off, const void* src, uint64_t len) const;

  // RegionState at the time of open() (before this start was recorded).
  const RegionState& state_at_open() const { return state_at_open_; }
  // Current persistent state.
  RegionState state() const;
  // Records a daemon start: state := running, start_count+1, and
  // unclean_starts+1 when the previous daemon did not shut down cleanly.
  // Returns true when this start found the region not marked clean.
  bool mark_running();
  // Records a clean shutdown (state := clean), persisted.
  void mark_clean();

 private:
  Region() = default;
  void msync_or_die(uint64_t off, uint64_t len) const;

  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  size_t mapped_len_ = 0;
  bool is_pmem_ = false;
  bool created_ = false;
  RegionHeader header_{};
  RegionState state_at_open_{};
  std::string real_path_;
  int fd_ = -1;  // read-write; holds the exclusive flock for the daemon's lifetime
  int client_fd_ = -1;
  uint64_t device_ = 0, inode_ = 0;
  std::optional<Logger> log_;
};

}  // namespace pandora::memd
