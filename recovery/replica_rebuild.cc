#include "recovery/replica_rebuild.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "common/latch.h"
#include "common/slot_layout.h"
#include "compute/op_batch.h"
#include "compute/table_geometry.h"
#include "recovery/recovery_ops.h"

namespace pandora {

using recovery_ops::batch_timeout;
using recovery_ops::live;

namespace {

// Bytes a scan READ or WRITE covers at most (whole buckets).
constexpr uint64_t kChunk = 1 << 20;

uint64_t us_since(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count());
}

// A slot header in a local buffer.
void put_header(uint8_t* p, uint64_t key, uint64_t version, uint64_t meta) {
  store_u64(p, key);
  store_u64(p + kSlotLatchOffset, kLatchFree);
  store_u64(p + kSlotVersionOffset, version);
  store_u64(p + offsetof(SlotHeader, meta), meta);
}

class Rebuild {
 public:
  Rebuild(const Cluster& cluster, std::span<Connection* const> conns, size_t target, RelocationJournal& journal,
          const Logger& logger, const RebuildOptions& options)
      : c_(cluster),
        conns_(conns),
        target_(target),
        target_id_(target < cluster.node_count() ? cluster.node(target).region.node_id : 0),
        journal_(journal),
        log_(logger),
        o_(options),
        batch_(conns, batch_timeout(cluster)) {}

  // Step 5 alone (clear_replacement_log()).
  Status zero_log_only() {
    if (target_ >= conns_.size() || conns_[target_] == nullptr) {
      return Status(Errc::kInvalidArgument, "no connection to the replacement node");
    }
    return zero_log_area();
  }

  // Step 1 alone (finish_relocations()).
  Result<uint64_t> finish_only() {
    if (!c_.has_directory()) return Status(Errc::kInvalidArgument, "the table directory is not loaded");
    if (Status s = finish_journaled_moves(); !s) return s;
    return report_.resumed;
  }

  Result<RebuildReport> run() {
    if (!c_.has_directory()) return Status(Errc::kInvalidArgument, "rebuild: the table directory is not loaded");
    if (target_ >= conns_.size() || conns_[target_] == nullptr) {
      return Status(Errc::kInvalidArgument, "rebuild: no connection to the replacement node");
    }
    if (!c_.failed_over(target_)) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("rebuild: memory node {} is in the configuration (only a failed-over node is "
                                "rebuilt)", target_id_));
    }
    for (size_t n = 0; n < c_.node_count(); ++n) {
      if (live(c_, conns_, n)) live_.push_back(n);
    }
    if (live_.empty()) return Status(Errc::kUnavailable, "rebuild: no live memory node to copy from");
    if (Status s = finish_journaled_moves(); !s) return s;
    if (Status s = copy_directory(); !s) return s;
    const auto scan_start = std::chrono::steady_clock::now();
    for (const TableEntry& t : c_.directory().tables) {
      if (Status s = copy_table(t); !s) return s;
    }
    report_.scan_us = us_since(scan_start);
    const auto relocate_start = std::chrono::steady_clock::now();
    if (Status s = relocate_conflicts(); !s) return s;
    report_.relocate_us = us_since(relocate_start);
    if (o_.zero_log) {
      if (Status s = zero_log_area(); !s) return s;
    }
    return report_;
  }

 private:
  struct Conflict {
    const TableEntry* t;
    uint64_t key;
    uint64_t from;
    size_t t_index;
  };

  Status io(std::string_view what) {
    Status s = batch_.run();
    batch_.clear();
    if (!s) return Status(s.code(), fmt::format("rebuild of memory node {}: {}: {}", target_id_, what, s.message()));
    return s;
  }

  bool belongs_on_target(uint32_t table, uint64_t key) const {
    const auto ids = c_.placement().replicas_of_shard(c_.placement().shard_of(table, key));
    return std::find(ids.begin(), ids.end(), target_id_) != ids.end();
  }

  // The live replicas of the key's shard (the target is not among them).
  std::vector<size_t> survivors(uint32_t table, uint64_t key) const {
    std::vector<size_t> out;
    for (uint16_t n : c_.replica_indexes(c_.placement().shard_of(table, key))) {
      if (live(c_, conns_, n)) out.push_back(n);
    }
    return out;
  }

  // 1. A move is started once its row sits at `to` on some survivor: then
  // every survivor gets it there and loses it at `from`.
  Status finish_journaled_moves() {
    auto moves = journal_.read();
    if (!moves) return moves.status();
    if (moves->empty()) return Status::ok();
    log_.info("rebuild of memory node {}: finishing {} journaled row move(s) of a previous run", target_id_,
              moves->size());
    for (const Relocation& m : *moves) {
      const TableEntry* t = c_.directory().find(m.table_id);
      if (!t || !is_slot_offset(*t, m.from) || !is_slot_offset(*t, m.to)) {
        return Status(Errc::kCorrupt, fmt::format("relocation journal names table {} slots {:#x} -> {:#x}, not in "
                                                  "the table directory", m.table_id, m.from, m.to));
      }
      const std::vector<size_t> s = survivors(m.table_id, m.key);
      std::vector<uint8_t> from(s.size() * t->slot_bytes), to(s.size() * t->slot_bytes);
      for (size_t i = 0; i < s.size(); ++i) {
        batch_.read(s[i], m.from, from.data() + i * t->slot_bytes, static_cast<uint32_t>(t->slot_bytes));
        batch_.read(s[i], m.to, to.data() + i * t->slot_bytes, static_cast<uint32_t>(t->slot_bytes));
      }
      if (Status st = io("reading a journaled move"); !st) return st;
      auto holds = [&](const std::vector<uint8_t>& b, size_t i) {
        SlotView v(b.data() + i * t->slot_bytes);
        return v.occupied() && v.key() == m.key;
      };
      const uint8_t* moved = nullptr;
      for (size_t i = 0; i < s.size() && !moved; ++i) {
        if (holds(to, i)) moved = to.data() + i * t->slot_bytes;
      }
      if (!moved) continue;  // written nowhere: the row stays where it is
      std::vector<uint8_t> headers(s.size() * sizeof(SlotHeader));
      for (size_t i = 0; i < s.size(); ++i) {
        if (!holds(to, i)) batch_.write(s[i], m.to, moved, static_cast<uint32_t>(t->slot_bytes));
      }
      if (Status st = io("finishing a journaled move"); !st) return st;
      for (size_t i = 0; i < s.size(); ++i) {
        if (!holds(from, i)) continue;
        SlotView v(from.data() + i * t->slot_bytes);
        put_header(headers.data() + i * sizeof(SlotHeader), m.key, v.version() + 1, 0);
        batch_.write(s[i], m.from, headers.data() + i * sizeof(SlotHeader), sizeof(SlotHeader));
      }
      if (Status st = io("freeing a journaled move's old slot"); !st) return st;
      ++report_.resumed;
    }
    return journal_.clear();
  }

  // 2.
  Status copy_directory() {
    std::vector<uint8_t> dir(kTableDirBytes);
    batch_.read(live_[0], c_.table_begin(), dir.data(), static_cast<uint32_t>(dir.size()));
    if (Status s = io("reading the table directory"); !s) return s;
    batch_.write(target_, c_.table_begin(), dir.data(), static_cast<uint32_t>(dir.size()));
    report_.bytes_read += dir.size();
    report_.bytes_written += dir.size();
    return io("writing the table directory");
  }

  // 3.
  Status copy_table(const TableEntry& t) {
    const size_t t_index = static_cast<size_t>(&t - c_.directory().tables.data());
    const uint64_t bb = bucket_bytes(t);
    const uint64_t per_io = std::max<uint64_t>(1, kChunk / bb);
    const uint64_t slots = t.bucket_count * t.slots_per_bucket;
    if (used_.size() <= t_index) used_.resize(t_index + 1);
    used_[t_index].assign(slots, false);
    std::vector<std::vector<uint8_t>> in(c_.node_count());
    std::vector<uint8_t> out;
    std::vector<uint64_t> keys_here;
    // Chunk k's WRITE to the target goes in one batch with chunk k+1's
    // READs from the survivors, so the two directions overlap.
    auto post_reads = [&](uint64_t b0) {
      const uint64_t nb = std::min<uint64_t>(per_io, t.bucket_count - b0);
      for (size_t n : live_) {
        in[n].resize(nb * bb);
        batch_.read(n, bucket_offset(t, b0), in[n].data(), static_cast<uint32_t>(nb * bb));
        report_.bytes_read += nb * bb;
      }
    };
    post_reads(0);
    if (Status s = io(fmt::format("reading table {}", table_name(t))); !s) return s;
    for (uint64_t b0 = 0; b0 < t.bucket_count; b0 += per_io) {
      const uint64_t nb = std::min<uint64_t>(per_io, t.bucket_count - b0);
      const uint64_t base = bucket_offset(t, b0);
      out.assign(nb * bb, 0);
      for (uint64_t i = 0; i < nb * t.slots_per_bucket; ++i) {
        uint8_t* o = out.data() + i * t.slot_bytes;
        uint64_t max_version = 0;
        const uint8_t* kept = nullptr;
        keys_here.clear();
        for (size_t n : live_) {
          const uint8_t* p = in[n].data() + i * t.slot_bytes;
          SlotView v(p);
          max_version = std::max(max_version, v.version());
          if (!v.occupied() || !belongs_on_target(t.table_id, v.key())) continue;
          if (kept && SlotView(kept).key() == v.key()) {
            if (SlotView(kept).version() != v.version()) {
              return Status(Errc::kCorrupt,
                            fmt::format("table {} key {}: its live replicas hold versions {} and {} (a transaction "
                                        "left undecided?); not copying it", table_name(t), v.key(),
                                        SlotView(kept).version(), v.version()));
            }
            continue;
          }
          if (!kept) {
            kept = p;
            continue;
          }
          if (std::find(keys_here.begin(), keys_here.end(), v.key()) != keys_here.end()) continue;
          keys_here.push_back(v.key());
          conflicts_.push_back(Conflict{&t, v.key(), base + i * t.slot_bytes, t_index});
        }
        if (kept) {
          std::memcpy(o, kept, t.slot_bytes);
          store_u64(o + kSlotLatchOffset, kLatchFree);
          used_[t_index][b0 * t.slots_per_bucket + i] = true;
          ++report_.rows;
        } else {
          put_header(o, 0, max_version, 0);
        }
      }
      batch_.write(target_, base, out.data(), static_cast<uint32_t>(out.size()));
      report_.bytes_written += out.size();
      if (b0 + per_io < t.bucket_count) post_reads(b0 + per_io);  // `in` is consumed: refill it
      if (Status s = io(fmt::format("copying table {}", table_name(t))); !s) return s;
    }
    return Status::ok();
  }

  // 4.
  Status relocate_conflicts() {
    if (conflicts_.empty()) return Status::ok();
    log_.info("rebuild of memory node {}: {} row(s) share a slot with another row that belongs there: relocating",
              target_id_, conflicts_.size());
    for (size_t first = 0; first < conflicts_.size(); first += o_.journal_batch) {
      const size_t last = std::min(conflicts_.size(), first + o_.journal_batch);
      std::vector<Relocation> moves;
      std::vector<std::vector<uint8_t>> images;
      std::vector<uint64_t> old_versions;
      for (size_t k = first; k < last; ++k) {
        std::vector<uint8_t> image;
        uint64_t old_version = 0;
        auto to = choose_slot(conflicts_[k], &image, &old_version);
        if (!to) return to.status();
        moves.push_back(Relocation{conflicts_[k].t->table_id, conflicts_[k].key, conflicts_[k].from, *to});
        images.push_back(std::move(image));
        old_versions.push_back(old_version);
      }
      if (Status s = journal_.write(moves); !s) return s;
      for (size_t k = 0; k < moves.size(); ++k) {
        const Conflict& c = conflicts_[first + k];
        for (size_t n : survivors(c.t->table_id, c.key)) {
          batch_.write(n, moves[k].to, images[k].data(), static_cast<uint32_t>(images[k].size()));
        }
        batch_.write(target_, moves[k].to, images[k].data(), static_cast<uint32_t>(images[k].size()));
        report_.bytes_written += images[k].size();
      }
      if (Status s = io("writing relocated rows"); !s) return s;
      if (o_.after_moves_written) o_.after_moves_written();
      std::vector<uint8_t> headers(moves.size() * sizeof(SlotHeader));
      for (size_t k = 0; k < moves.size(); ++k) {
        uint8_t* h = headers.data() + k * sizeof(SlotHeader);
        put_header(h, moves[k].key, old_versions[k] + 1, 0);
        for (size_t n : survivors(moves[k].table_id, moves[k].key)) batch_.write(n, moves[k].from, h, sizeof(SlotHeader));
      }
      if (Status s = io("freeing relocated rows' old slots"); !s) return s;
      if (Status s = journal_.clear(); !s) return s;
      report_.relocated += moves.size();
    }
    return Status::ok();
  }

  // A slot of the row's probe path free on every survivor and on the
  // target (as planned), other than its own; *image: the row as it is to be
  // written there (latch free, version above every version the slot had).
  Result<uint64_t> choose_slot(const Conflict& c, std::vector<uint8_t>* image, uint64_t* old_version) {
    const TableEntry& t = *c.t;
    const uint64_t bb = bucket_bytes(t);
    std::vector<size_t> nodes = survivors(t.table_id, c.key);
    if (nodes.empty()) return Status(Errc::kUnavailable, fmt::format("table {} key {} has no live replica",
                                                                      table_name(t), c.key));
    nodes.push_back(target_);
    const uint64_t home = home_bucket(t, c.key);
    std::vector<uint8_t> path(nodes.size() * t.max_probe * bb);
    for (size_t j = 0; j < nodes.size(); ++j) {
      for (uint32_t step = 0; step < t.max_probe; ++step) {
        batch_.read(nodes[j], bucket_offset(t, path_bucket(t, home, step)),
                    path.data() + (j * t.max_probe + step) * bb, static_cast<uint32_t>(bb));
        report_.bytes_read += bb;
      }
    }
    if (Status s = io("reading a probe path"); !s) return s;
    auto at = [&](size_t j, uint32_t step, uint32_t s) {
      return path.data() + (j * t.max_probe + step) * bb + uint64_t{s} * t.slot_bytes;
    };
    // The row as its first survivor holds it at `from`.
    const uint8_t* row = nullptr;
    for (uint32_t step = 0; step < t.max_probe && !row; ++step) {
      for (uint32_t s = 0; s < t.slots_per_bucket; ++s) {
        if (slot_offset(t, path_bucket(t, home, step), s) == c.from) row = at(0, step, s);
      }
    }
    if (!row || !SlotView(row).occupied() || SlotView(row).key() != c.key) {
      return Status(Errc::kCorrupt, fmt::format("table {} key {} is no longer at {:#x} on node {}", table_name(t),
                                                c.key, c.from, nodes[0]));
    }
    for (uint32_t step = 0; step < t.max_probe; ++step) {
      const uint64_t bucket = path_bucket(t, home, step);
      for (uint32_t s = 0; s < t.slots_per_bucket; ++s) {
        const uint64_t off = slot_offset(t, bucket, s);
        const uint64_t index = (off - t.offset) / t.slot_bytes;
        if (off == c.from || used_[c.t_index][index]) continue;
        uint64_t max_version = SlotView(row).version();
        bool free_everywhere = true;
        for (size_t j = 0; j < nodes.size() && free_everywhere; ++j) {
          SlotView v(at(j, step, s));
          free_everywhere = !v.occupied();
          max_version = std::max(max_version, v.version());
        }
        if (!free_everywhere) continue;
        used_[c.t_index][index] = true;
        image->assign(row, row + t.slot_bytes);
        store_u64(image->data() + kSlotLatchOffset, kLatchFree);
        store_u64(image->data() + kSlotVersionOffset, max_version + 1);
        *old_version = SlotView(row).version();
        return off;
      }
    }
    return Status(Errc::kInvalidArgument,
                  fmt::format("table {} key {}: no slot of its probe path ({} buckets) is free on all its replicas "
                              "and the replacement node {}; the table is too full to re-replicate (load it with "
                              "more room, or add the node back with fewer rows)",
                              table_name(t), c.key, t.max_probe, target_id_));
  }

  // 5.
  Status zero_log_area() {
    const wire::RegionInfo& r = c_.node(target_).region;
    const std::vector<uint8_t> zeros(kChunk, 0);
    for (uint64_t off = r.log_offset; off < r.region_size; off += kChunk) {
      const uint64_t len = std::min<uint64_t>(kChunk, r.region_size - off);
      batch_.write(target_, off, zeros.data(), static_cast<uint32_t>(len));
      report_.bytes_written += len;
    }
    return io("zeroing the log area");
  }

  const Cluster& c_;
  std::span<Connection* const> conns_;
  size_t target_;
  uint32_t target_id_;
  RelocationJournal& journal_;
  Logger log_;
  RebuildOptions o_;
  OpBatch batch_;
  std::vector<size_t> live_;
  std::vector<Conflict> conflicts_;
  std::vector<std::vector<bool>> used_;  // per table: the target's slots taken (as planned)
  RebuildReport report_;
};

}  // namespace

std::string encode_relocations(const std::vector<Relocation>& moves) {
  std::string out;
  for (const Relocation& m : moves) out += fmt::format("{} {} {} {}\n", m.table_id, m.key, m.from, m.to);
  return out;
}

Result<std::vector<Relocation>> decode_relocations(std::string_view text) {
  std::vector<Relocation> out;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    uint64_t f[4] = {};
    const char* p = line.data();
    const char* end = line.data() + line.size();
    int fields = 0;
    for (; fields < 4; ++fields) {
      if (fields > 0) {
        if (p == end || *p != ' ') break;
        ++p;
      }
      auto [next, ec] = std::from_chars(p, end, f[fields]);
      if (ec != std::errc()) break;
      p = next;
    }
    if (fields != 4 || p != end || f[0] > UINT32_MAX) {
      return Status(Errc::kCorrupt, fmt::format("relocation journal line {} is not 'TABLE KEY FROM TO': '{}'",
                                                line_no, line));
    }
    out.push_back(Relocation{static_cast<uint32_t>(f[0]), f[1], f[2], f[3]});
  }
  return out;
}

Result<uint64_t> finish_relocations(const Cluster& cluster, std::span<Connection* const> conns,
                                    RelocationJournal& journal, const Logger& logger) {
  return Rebuild(cluster, conns, SIZE_MAX, journal, logger, {}).finish_only();
}

Status clear_replacement_log(const Cluster& cluster, std::span<Connection* const> conns, size_t target,
                             const Logger& logger) {
  class NoJournal final : public RelocationJournal {
    Result<std::vector<Relocation>> read() override { return std::vector<Relocation>{}; }
    Status write(const std::vector<Relocation>&) override { return Status::ok(); }
    Status clear() override { return Status::ok(); }
  } none;
  return Rebuild(cluster, conns, target, none, logger, {}).zero_log_only();
}

Result<RebuildReport> rebuild_memory_node(const Cluster& cluster, std::span<Connection* const> conns, size_t target,
                                          RelocationJournal& journal, const Logger& logger,
                                          const RebuildOptions& options) {
  return Rebuild(cluster, conns, target, journal, logger, options).run();
}

}  // namespace pandora
