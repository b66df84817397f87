#include "compute/txn/context.h"

#include "compute/txn/mutations.h"
#include "compute/txn/protocol.h"

namespace pandora::txn {

void Item::recycle() {
  // Every field from a fresh Item except the buffers, which keep their
  // capacity (so a field added later is reset without being listed here).
  Item fresh;
  fresh.latches.swap(latches);
  fresh.image.swap(image);
  fresh.value.swap(value);
  fresh.undo.swap(undo);
  fresh.commit_buf.swap(commit_buf);
  fresh.pre_image.swap(pre_image);
  fresh.ford_undo.swap(ford_undo);
  fresh.path.swap(path);
  *this = std::move(fresh);
  latches.clear();
  image.clear();
  value.clear();
  undo.clear();
  commit_buf.clear();
  pre_image.clear();
  ford_undo.clear();
  path.clear();
}

TxnContext::TxnContext(Cluster& cluster_, RemoteOps& ops_, AddressCache& cache_, uint16_t coordinator_)
    : cluster(cluster_),
      dir(cluster_.directory()),
      ops(ops_),
      cache(cache_),
      coordinator(coordinator_),
      pid(cluster_.config().compute_id),
      protocol(&protocol_for(cluster_.config().protocol)),
      plan(protocol->plan()) {
#ifdef PANDORA_BUG_SWITCHES
  apply_mutations(cluster.config().bugs, plan);
#endif
  Result<uint32_t> l = cluster.lanes().lane_index(cluster.lane_slot(), coordinator);
  // Cluster::load_directory checked that every coordinator of this node has
  // a lane; a coordinator id beyond that is a scheduler bug.
  lane = l ? *l : UINT32_MAX;
  log_nodes = cluster.log_node_indexes(pid);
  ford_cursor.assign(cluster.node_count(), 0);
  // lane_seq must increase across restarts of a coordinator too; the wall
  // clock in ns is far ahead of any count of records written before.
  lane_seq = cluster.time().realtime_ns();
}

}  // namespace pandora::txn
