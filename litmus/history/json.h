// The little JSON the history tools need, written for exactly their schemas:
// the history line format (history.h), the dbcop export and the checker's
// JSON report. No external JSON library is available, and a general one
// would accept far more than these formats allow.
//
// Writing: append_* add one value to a string. Strings are escaped per
// RFC 8259; numbers are unsigned 64-bit integers only.
//
// Reading: a Cursor walks one JSON text (one history line) strictly:
// unsigned integers only (no sign, fraction, exponent or leading zero),
// ASCII strings only (escapes decoded; \u only below 0x80 since no schema
// string needs more), `true`/`false`, objects and arrays. Every failure
// records the first error with its 1-based column; later calls keep failing,
// so a caller can check error() once at the end of a parse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pandora::history::json {

void append_string(std::string& out, std::string_view s);
void append_u64(std::string& out, uint64_t v);
void append_bool(std::string& out, bool v);

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  // Skips whitespace (space, tab, CR).
  void skip_ws();
  // Skips whitespace; true and consumes `c` if it is next.
  bool consume(char c);
  // Like consume(), but a missing `c` is an error ("expected 'c' ...").
  bool expect(char c);

  bool parse_string(std::string* out);
  bool parse_u64(uint64_t* out);
  bool parse_bool(bool* out);

  // Parses `{ "key": value, ... }`: for each member, on_member(key) must
  // parse the value (returning false stops with the error it recorded).
  template <typename F>
  bool parse_object(F&& on_member);
  // Parses `[ value, ... ]`: on_element() parses each element.
  template <typename F>
  bool parse_array(F&& on_element);

  // Only whitespace is left; anything else is an error.
  bool expect_end();

  // Records an error at the current position (keeps the first one).
  bool fail(std::string message);
  // Records an error at a given 0-based offset (keeps the first one).
  bool fail_at(size_t offset, std::string message);

  bool ok() const { return error_.empty(); }
  // "column N: what" for the first error, empty when none.
  const std::string& error() const { return error_; }
  size_t offset() const { return pos_; }

 private:
  // A short description of what is at the cursor, for error messages.
  std::string found() const;

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

template <typename F>
bool Cursor::parse_object(F&& on_member) {
  if (!expect('{')) return false;
  if (consume('}')) return true;
  std::string key;
  do {
    skip_ws();
    if (!parse_string(&key)) return false;
    if (!expect(':')) return false;
    if (!on_member(key)) return false;
    if (!ok()) return false;
  } while (consume(','));
  return expect('}');
}

template <typename F>
bool Cursor::parse_array(F&& on_element) {
  if (!expect('[')) return false;
  if (consume(']')) return true;
  do {
    if (!on_element()) return false;
    if (!ok()) return false;
  } while (consume(','));
  return expect(']');
}

}  // namespace pandora::history::json
