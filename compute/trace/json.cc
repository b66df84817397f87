#include "compute/trace/json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

namespace pandora::history::json {
namespace {

Status corrupt(std::string message) { return Status(Errc::kCorrupt, std::move(message)); }

// nlohmann's what() is "[json.exception.parse_error.101] parse error at line
// 1, column 61: syntax error ..."; a history text is one line, so the
// column is what locates the error.
std::string syntax_message(const nlohmann::json::parse_error& e) {
  const std::string what = e.what();
  const size_t column = what.find("column ");
  if (column != std::string::npos) return what.substr(column);
  const size_t colon = what.find("] ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

}  // namespace

Result<Json> parse(std::string_view text) {
  // Keys of the objects being parsed, innermost last.
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  auto on_event = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open.empty()) open.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open.empty() && !open.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    Json j = Json::parse(text.begin(), text.end(), on_event);
    if (!duplicate.empty()) return corrupt(fmt::format("key \"{}\" given twice in one object", duplicate));
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    return corrupt(syntax_message(e));
  }
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string describe(const Json& j) {
  switch (j.type()) {
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return fmt::format("the string {}", dump(j));
    case Json::value_t::null: return "null";
    default: return dump(j);  // numbers and booleans as written
  }
}

Fields::Fields(const Json& object, std::string where)
    : object_(object), where_(where.empty() ? std::string() : where + ": ") {}

Status Fields::error(std::string_view what) const { return corrupt(where_ + std::string(what)); }

Status Fields::check(std::initializer_list<std::string_view> required,
                     std::initializer_list<std::string_view> optional) const {
  if (!object_.is_object()) return error(fmt::format("expected an object, found {}", describe(object_)));
  auto listed = [](std::initializer_list<std::string_view> names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const auto& item : object_.items()) {
    if (!listed(required, item.key()) && !listed(optional, item.key())) {
      return error(fmt::format("unknown field \"{}\"", item.key()));
    }
  }
  for (std::string_view name : required) {
    if (!object_.contains(name)) return error(fmt::format("no \"{}\" field", name));
  }
  return Status::ok();
}

Status Fields::u64(std::string_view name, uint64_t* out, uint64_t max) const {
  const Json& v = object_.at(name);
  if (!v.is_number_unsigned()) {
    // Integers above 2^64 - 1 parse as floating point.
    const bool too_big = v.is_number_float() && v.get<double>() >= 18446744073709551615.0 &&
                         std::floor(v.get<double>()) == v.get<double>();
    return error(fmt::format("\"{}\" is {}: expected an unsigned integer{}", name, describe(v),
                             too_big ? " (it does not fit in 64 bits)" : ""));
  }
  const auto n = v.get<uint64_t>();
  if (n > max) return error(fmt::format("\"{}\" is {}, above its maximum {}", name, n, max));
  *out = n;
  return Status::ok();
}

Status Fields::str(std::string_view name, std::string* out) const {
  const Json& v = object_.at(name);
  if (!v.is_string()) return error(fmt::format("\"{}\" is {}: expected a string", name, describe(v)));
  *out = v.get<std::string>();
  return Status::ok();
}

Status Fields::boolean(std::string_view name, bool* out) const {
  const Json& v = object_.at(name);
  if (!v.is_boolean()) return error(fmt::format("\"{}\" is {}: expected true or false", name, describe(v)));
  *out = v.get<bool>();
  return Status::ok();
}

}  // namespace pandora::history::json
