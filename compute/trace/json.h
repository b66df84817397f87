// JSON for the history tools (history lines and header, checker report,
// dbcop export, initial state), on nlohmann-json: the library parses and
// prints, and this adds what the schemas need on top of it.
//
// Parsing is strict where nlohmann-json is lenient: a key given twice in
// one object is an error (nlohmann keeps one silently), and Fields reads
// one object of a fixed schema - unknown fields, missing required ones and
// values of the wrong type or range are errors that name the field.
// Every message says what is wrong and where in the text (nlohmann's column
// for syntax errors, the field's name otherwise); callers add the file and
// line.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace pandora::history::json {

// Keeps fields in insertion order, so written objects read in schema order.
using Json = nlohmann::ordered_json;

// Parses one JSON text (kCorrupt on any error): "column 61: syntax error
// while parsing value - unexpected end of input; ...", "key \"seq\" given
// twice".
Result<Json> parse(std::string_view text);

// Compact text (no spaces), as the history files and reports use.
std::string dump(const Json& j);

// Reads one object of a fixed schema. `where` prefixes every message
// ("item 2: "); empty for a top-level object.
class Fields {
 public:
  Fields(const Json& object, std::string where = {});

  // The value is an object, every `required` field is there and no field
  // is outside `required` and `optional`.
  Status check(std::initializer_list<std::string_view> required,
               std::initializer_list<std::string_view> optional = {}) const;

  bool has(std::string_view name) const { return object_.contains(name); }
  // An unsigned integer no larger than `max`.
  Status u64(std::string_view name, uint64_t* out, uint64_t max = UINT64_MAX) const;
  Status str(std::string_view name, std::string* out) const;
  Status boolean(std::string_view name, bool* out) const;

  // kCorrupt with the prefix.
  Status error(std::string_view what) const;

 private:
  const Json& object_;
  std::string where_;
};

// "an array", "a string", "-1", ... for messages about a value.
std::string describe(const Json& j);

}  // namespace pandora::history::json
