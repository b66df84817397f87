#include "compute/trace/initial_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace pandora::history {

InitialState InitialState::loaded(uint64_t version) {
  InitialState s;
  s.known_ = true;
  s.version_ = version;
  return s;
}

InitialState InitialState::loaded(uint64_t version, std::vector<KeyRange> present) {
  InitialState s = loaded(version);
  s.keys_listed_ = true;
  std::sort(present.begin(), present.end(), [](const KeyRange& a, const KeyRange& b) {
    return std::tie(a.table, a.first, a.last) < std::tie(b.table, b.first, b.last);
  });
  for (const KeyRange& r : present) {
    KeyRange* back = s.present_.empty() ? nullptr : &s.present_.back();
    if (back != nullptr && back->table == r.table && (back->last == UINT64_MAX || r.first <= back->last + 1)) {
      back->last = std::max(back->last, r.last);
    } else {
      s.present_.push_back(r);
    }
  }
  return s;
}

bool InitialState::present_at_start(uint32_t table, uint64_t key) const {
  if (!keys_listed_) return true;
  // The first range that does not end before (table, key).
  const auto it = std::lower_bound(present_.begin(), present_.end(), std::make_pair(table, key),
                                   [](const KeyRange& r, const std::pair<uint32_t, uint64_t>& k) {
                                     return std::tie(r.table, r.last) < std::tie(k.first, k.second);
                                   });
  return it != present_.end() && it->table == table && it->first <= key;
}

IncarnationStart InitialState::start(uint32_t table, uint64_t key, std::optional<uint64_t> lowest_unrecorded_read,
                                     std::optional<uint64_t> lowest_committed_write) const {
  IncarnationStart out;
  if (known_) {
    if (present_at_start(table, key)) {
      out.initial = version_;
      out.floor = version_;
    }
    return out;
  }
  if (lowest_unrecorded_read && (!lowest_committed_write || *lowest_unrecorded_read < *lowest_committed_write)) {
    out.initial = lowest_unrecorded_read;
  }
  return out;
}

Status InitialState::merge(const InitialState& other, const std::string& source) {
  if (!other.known_) return Status::ok();
  if (!known_) {
    *this = other;
    return Status::ok();
  }
  if (*this == other) return Status::ok();
  return Status(Errc::kMismatch, fmt::format("{}: its initial state {} differs from the other files' {}", source,
                                             json::dump(other.to_json()), json::dump(to_json())));
}

json::Json InitialState::to_json() const {
  if (!known_) return "unknown";
  json::Json j = {{"version", version_}};
  if (keys_listed_) {
    json::Json present = json::Json::array();
    for (const KeyRange& r : present_) present.push_back({{"table", r.table}, {"first", r.first}, {"last", r.last}});
    j["present"] = std::move(present);
  }
  return j;
}

Result<InitialState> InitialState::from_json(const json::Json& j) {
  if (j.is_string() && j.get<std::string>() == "unknown") return unknown();
  json::Fields f(j, "\"initial\"");
  if (!j.is_object()) return f.error(fmt::format("expected \"unknown\" or an object, found {}", json::describe(j)));
  if (Status s = f.check({"version"}, {"present"}); !s) return s;
  uint64_t version = 0;
  if (Status s = f.u64("version", &version); !s) return s;
  if (version == 0) return f.error("\"version\" is 0; a loaded row has version 1 or above");
  if (!f.has("present")) return loaded(version);
  const json::Json& list = j.at("present");
  if (!list.is_array()) return f.error(fmt::format("\"present\" is {}: expected an array", json::describe(list)));
  std::vector<KeyRange> ranges;
  for (size_t i = 0; i < list.size(); ++i) {
    json::Fields r(list[i], fmt::format("\"initial\" range {}", i + 1));
    KeyRange k;
    uint64_t table = 0;
    if (Status s = r.check({"table", "first", "last"}); !s) return s;
    if (Status s = r.u64("table", &table, UINT32_MAX); !s) return s;
    if (Status s = r.u64("first", &k.first); !s) return s;
    if (Status s = r.u64("last", &k.last); !s) return s;
    if (k.last < k.first) return r.error(fmt::format("\"last\" {} is below \"first\" {}", k.last, k.first));
    k.table = static_cast<uint32_t>(table);
    ranges.push_back(k);
  }
  return loaded(version, std::move(ranges));
}

}  // namespace pandora::history
