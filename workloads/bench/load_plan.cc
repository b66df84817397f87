#include "workloads/bench/load_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/lane_map.h"
#include "common/region_layout.h"

namespace pandora::workloads {

namespace {

constexpr uint64_t kPage = 4096;

uint64_t round_up_page(uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

// `bytes` rounded up to MiB, as pandora-memd --size takes it ("474M").
std::string mib_flag(uint64_t bytes) { return fmt::format("{}M", (bytes + (1u << 20) - 1) >> 20); }

}  // namespace

uint64_t LoadPlan::region_bytes(uint64_t log_size) const { return round_up_page(tables_end) + log_size; }

Result<LoadPlan> plan_load(const std::vector<std::unique_ptr<Workload>>& workloads, uint32_t lane_bytes,
                           bool lane_bytes_given) {
  LoadPlan plan;
  plan.lane_bytes = lane_bytes;
  std::vector<TableSpec> specs;
  for (const auto& w : workloads) {
    plan.workloads.emplace_back(w->name());
    const uint32_t need = w->min_log_lane_bytes();
    if (need > plan.lane_bytes) {
      if (lane_bytes_given) {
        return Status(Errc::kInvalidArgument,
                      fmt::format("--lane-bytes {} is too small for {}, whose largest log record needs lanes of {} "
                                  "bytes: give --lane-bytes {} or leave it out",
                                  lane_bytes, w->name(), need, need));
      }
      plan.lane_bytes = need;
      plan.lanes_sized_for = std::string(w->name());
    }
    for (TableSpec& t : w->tables()) specs.push_back(std::move(t));
  }
  // Every node lays the tables out alike from the table area's start; the
  // layout depends on neither the cluster, the shards nor the replicas.
  auto d = plan_table_directory(specs, /*cluster_id=*/1, /*shards=*/1, /*replicas=*/1, plan.lane_bytes,
                                /*lanes=*/0, kDataOffset, UINT64_MAX);
  if (!d) return d.status();
  plan.directory = std::move(*d);
  plan.tables_end = plan.directory.end_offset();
  return plan;
}

std::string format_load_plan(const LoadPlan& plan, uint64_t log_size) {
  std::string out = fmt::format("tables of {} (every memory node holds the whole layout):\n",
                                fmt::join(plan.workloads, ", "));
  for (const TableEntry& t : plan.directory.tables) {
    const uint64_t bytes = t.bucket_count * plan.directory.bucket_bytes(t);
    out += fmt::format("  {:<22} {:>12} rows  {:>5} B slots  {:>14} bytes\n",
                       table_name(t), t.expected_rows, t.slot_bytes, bytes);
  }
  const uint64_t table_bytes = plan.tables_end - kDataOffset;
  out += fmt::format("  table area (directory included): {} bytes\n", table_bytes);
  out += fmt::format("log lanes: {} bytes ({})\n", plan.lane_bytes,
                     plan.lanes_sized_for.empty() ? std::string("--lane-bytes or its default")
                                                  : plan.lanes_sized_for + "'s largest log record");
  const uint64_t lanes = log_size / plan.lane_bytes;
  out += fmt::format("each pandora-memd: --size {} --log-size {} (at least {} bytes; its log area holds {} lanes: {} "
                     "compute nodes of {} lanes without --zookeeper)\n",
                     mib_flag(plan.region_bytes(log_size)), mib_flag(log_size), plan.region_bytes(log_size), lanes,
                     lanes / kFixedSlotLanes, kFixedSlotLanes);
  out += fmt::format("plan: table_bytes={} lane_bytes={} region_bytes_without_log={}\n", table_bytes,
                     plan.lane_bytes, plan.region_bytes(0));
  return out;
}

}  // namespace pandora::workloads
