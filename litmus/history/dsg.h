// The serialization graph the checker builds, in compressed adjacency form,
// and the two graph searches it needs: strongly connected components over a
// subset of edge types (Tarjan, iterative so that a million-node component
// cannot overflow the stack) and a shortest path / cycle search.
//
// Nodes [0, real_nodes) are committed transactions and the checker's
// stand-in writers of unrecorded versions (checker.h); nodes above are
// "virtual" time points the checker uses to encode real-time order with
// O(n) edges (see checker.cc). Path lengths count real nodes only (0-1 BFS:
// entering a virtual node is free), so a cycle through the time chain is as
// short as the transactions on it.
//
// The searches keep per-node scratch arrays stamped with a generation
// number, so each call costs time proportional to the nodes it touches, not
// to the whole graph.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pandora::history {

enum class EdgeType : uint8_t {
  kWW = 0,  // write-depends: T1 installed a version, T2 the next one
  kWR = 1,  // read-depends: T2 read the version T1 installed
  kRW = 2,  // anti-depends: T1 read a version, T2 installed the next one
  kRT = 3,  // real-time: T1 ended before T2 began
};
inline constexpr uint8_t edge_bit(EdgeType t) { return static_cast<uint8_t>(1u << static_cast<unsigned>(t)); }
inline constexpr uint8_t kDependencyEdges = edge_bit(EdgeType::kWW) | edge_bit(EdgeType::kWR) | edge_bit(EdgeType::kRW);
inline constexpr uint8_t kAllEdges = kDependencyEdges | edge_bit(EdgeType::kRT);

struct Edge {
  uint32_t from = 0;
  uint32_t to = 0;
  // The checker's witnesses: the accesses (indices into its sorted access
  // table) that made this edge. Unused for real-time edges.
  uint32_t from_access = 0;
  uint32_t to_access : 30 = 0;
  uint32_t type : 2 = 0;  // EdgeType

  EdgeType edge_type() const { return static_cast<EdgeType>(type); }
};
static_assert(sizeof(Edge) == 16);

class Graph {
 public:
  // Takes the edges in any order (sorts them by source).
  Graph(uint32_t real_nodes, uint32_t virtual_nodes, std::vector<Edge> edges);

  uint32_t size() const { return static_cast<uint32_t>(offsets_.size() - 1); }
  uint32_t real_nodes() const { return real_nodes_; }
  bool is_virtual(uint32_t v) const { return v >= real_nodes_; }
  const Edge& edge(uint32_t id) const { return edges_[id]; }
  std::span<const Edge> out(uint32_t v) const {
    return std::span<const Edge>(edges_).subspan(offsets_[v], offsets_[v + 1] - offsets_[v]);
  }
  uint32_t first_edge(uint32_t v) const { return offsets_[v]; }

  // The strongly connected components with two or more nodes of the
  // subgraph induced by `scope` (every node when empty), using only edges
  // whose type bit is in `mask`. Each component is appended to *out.
  void components(uint8_t mask, std::span<const uint32_t> scope, std::vector<std::vector<uint32_t>>* out);

  // The fewest-real-nodes path from `src` to `dst` (a cycle when equal) over
  // `mask` edges whose ends are both in `scope`; *edge_ids gets the edge
  // indices in order. False when there is none. `dst` must be a real node.
  bool shortest_path(uint32_t src, uint32_t dst, uint8_t mask, std::span<const uint32_t> scope,
                     std::vector<uint32_t>* edge_ids);

 private:
  void set_scope(std::span<const uint32_t> scope);
  bool in_scope(uint32_t v) const { return scope_all_ || scope_gen_[v] == scope_token_; }

  uint32_t real_nodes_;
  std::vector<uint32_t> offsets_;  // node v's edges are [offsets_[v], offsets_[v+1])
  std::vector<Edge> edges_;

  // Scratch, generation-stamped.
  bool scope_all_ = true;
  uint32_t scope_token_ = 0;
  std::vector<uint32_t> scope_gen_;
  uint32_t visit_token_ = 0;
  std::vector<uint32_t> visit_gen_;
  std::vector<uint32_t> index_;   // Tarjan: discovery index; BFS: distance
  std::vector<uint32_t> low_;     // Tarjan: low link; BFS: the edge that reached the node
  std::vector<uint8_t> on_stack_;
};

}  // namespace pandora::history
