#include "litmus/history/dsg.h"

#include <algorithm>
#include <deque>
#include <utility>

namespace pandora::history {
namespace {

// Advances a generation token; on wrap-around the stamps are cleared so that
// an old stamp can never equal a new token.
void next_token(uint32_t* token, std::vector<uint32_t>* stamps) {
  if (++*token == 0) {
    std::fill(stamps->begin(), stamps->end(), 0);
    *token = 1;
  }
}

}  // namespace

Graph::Graph(uint32_t real_nodes, uint32_t virtual_nodes, std::vector<Edge> edges)
    : real_nodes_(real_nodes), edges_(std::move(edges)) {
  const uint32_t n = real_nodes + virtual_nodes;
  // Counting sort by source: linear, and keeps each node's edges in the
  // order the checker produced them (deterministic reports).
  offsets_.assign(static_cast<size_t>(n) + 1, 0);
  for (const Edge& e : edges_) ++offsets_[e.from + 1];
  for (uint32_t v = 0; v < n; ++v) offsets_[v + 1] += offsets_[v];
  std::vector<Edge> sorted(edges_.size());
  std::vector<uint32_t> fill(offsets_.begin(), offsets_.end() - 1);
  for (const Edge& e : edges_) sorted[fill[e.from]++] = e;
  edges_ = std::move(sorted);

  scope_gen_.assign(n, 0);
  visit_gen_.assign(n, 0);
  index_.assign(n, 0);
  low_.assign(n, 0);
  on_stack_.assign(n, 0);
}

void Graph::set_scope(std::span<const uint32_t> scope) {
  scope_all_ = scope.empty();
  if (scope_all_) return;
  next_token(&scope_token_, &scope_gen_);
  for (uint32_t v : scope) scope_gen_[v] = scope_token_;
}

void Graph::components(uint8_t mask, std::span<const uint32_t> scope, std::vector<std::vector<uint32_t>>* out) {
  set_scope(scope);
  next_token(&visit_token_, &visit_gen_);
  uint32_t counter = 0;
  std::vector<uint32_t> stack;
  struct Frame {
    uint32_t node;
    uint32_t next;  // next edge index to look at
  };
  std::vector<Frame> frames;

  auto visit = [&](uint32_t v) {
    visit_gen_[v] = visit_token_;
    index_[v] = low_[v] = counter++;
    stack.push_back(v);
    on_stack_[v] = 1;
    frames.push_back({v, offsets_[v]});
  };

  auto run_from = [&](uint32_t root) {
    if (visit_gen_[root] == visit_token_) return;
    visit(root);
    while (!frames.empty()) {
      Frame& f = frames.back();
      const uint32_t v = f.node;
      if (f.next < offsets_[v + 1]) {
        const Edge& e = edges_[f.next++];
        if ((mask & (1u << e.type)) == 0 || !in_scope(e.to)) continue;
        const uint32_t w = e.to;
        if (visit_gen_[w] != visit_token_) {
          visit(w);  // invalidates f
        } else if (on_stack_[w]) {
          low_[v] = std::min(low_[v], index_[w]);
        }
        continue;
      }
      frames.pop_back();
      if (low_[v] == index_[v]) {
        std::vector<uint32_t> component;
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack_[w] = 0;
          component.push_back(w);
        } while (w != v);
        if (component.size() >= 2) {
          std::sort(component.begin(), component.end());
          out->push_back(std::move(component));
        }
      }
      if (!frames.empty()) {
        const uint32_t parent = frames.back().node;
        low_[parent] = std::min(low_[parent], low_[v]);
      }
    }
  };

  if (scope.empty()) {
    for (uint32_t v = 0; v < size(); ++v) run_from(v);
  } else {
    for (uint32_t v : scope) run_from(v);
  }
}

bool Graph::shortest_path(uint32_t src, uint32_t dst, uint8_t mask, std::span<const uint32_t> scope,
                          std::vector<uint32_t>* edge_ids) {
  edge_ids->clear();
  set_scope(scope);
  next_token(&visit_token_, &visit_gen_);
  // 0-1 BFS: index_ holds the distance (real nodes entered), low_ the edge
  // that reached the node. Entries are (node, distance at push); stale ones
  // are skipped when popped.
  std::deque<std::pair<uint32_t, uint32_t>> queue;
  visit_gen_[src] = visit_token_;
  index_[src] = 0;
  low_[src] = UINT32_MAX;
  queue.emplace_back(src, 0);
  while (!queue.empty()) {
    const auto [u, d] = queue.front();
    queue.pop_front();
    if (d != index_[u]) continue;
    for (uint32_t id = offsets_[u]; id < offsets_[u + 1]; ++id) {
      const Edge& e = edges_[id];
      if ((mask & (1u << e.type)) == 0 || !in_scope(e.to)) continue;
      const uint32_t w = e.to;
      if (w == dst) {
        // Nodes leave the queue in distance order and entering dst costs 1,
        // so the first edge found into dst ends a shortest path.
        edge_ids->push_back(id);
        for (uint32_t at = u; at != src;) {
          const uint32_t via = low_[at];
          edge_ids->push_back(via);
          at = edges_[via].from;
        }
        std::reverse(edge_ids->begin(), edge_ids->end());
        return true;
      }
      const uint32_t cost = is_virtual(w) ? 0 : 1;
      const uint32_t nd = d + cost;
      if (visit_gen_[w] == visit_token_ && index_[w] <= nd) continue;
      visit_gen_[w] = visit_token_;
      index_[w] = nd;
      low_[w] = id;
      if (cost == 0) {
        queue.emplace_front(w, nd);
      } else {
        queue.emplace_back(w, nd);
      }
    }
  }
  return false;
}

}  // namespace pandora::history
