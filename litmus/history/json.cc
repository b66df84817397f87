#include "litmus/history/json.h"

#include <fmt/format.h>

namespace pandora::history::json {

void append_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

void append_u64(std::string& out, uint64_t v) {
  char buf[20];
  size_t n = 0;
  do {
    buf[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) out.push_back(buf[--n]);
}

void append_bool(std::string& out, bool v) { out += v ? "true" : "false"; }

void Cursor::skip_ws() {
  while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) ++pos_;
}

std::string Cursor::found() const {
  if (pos_ >= text_.size()) return "end of line";
  const auto c = static_cast<unsigned char>(text_[pos_]);
  if (c < 0x20 || c >= 0x7f) return fmt::format("byte 0x{:02x}", c);
  return fmt::format("'{}'", text_[pos_]);
}

bool Cursor::fail_at(size_t offset, std::string message) {
  if (error_.empty()) error_ = fmt::format("column {}: {}", offset + 1, message);
  return false;
}

bool Cursor::fail(std::string message) { return fail_at(pos_, std::move(message)); }

bool Cursor::consume(char c) {
  if (!ok()) return false;
  skip_ws();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

bool Cursor::expect(char c) {
  if (!ok()) return false;
  if (consume(c)) return true;
  return fail(fmt::format("expected '{}', found {}", c, found()));
}

bool Cursor::parse_string(std::string* out) {
  if (!ok()) return false;
  skip_ws();
  if (pos_ >= text_.size() || text_[pos_] != '"') return fail(fmt::format("expected a string, found {}", found()));
  const size_t start = pos_++;
  out->clear();
  while (true) {
    if (pos_ >= text_.size()) return fail_at(start, "unterminated string");
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return true;
    }
    if (c < 0x20) return fail(fmt::format("control byte 0x{:02x} inside a string (must be escaped)", c));
    if (c >= 0x80) return fail("non-ASCII byte inside a string (no field of this format needs one)");
    if (c != '\\') {
      out->push_back(static_cast<char>(c));
      ++pos_;
      continue;
    }
    if (pos_ + 1 >= text_.size()) return fail_at(start, "unterminated string");
    const char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"': out->push_back('"'); break;
      case '\\': out->push_back('\\'); break;
      case '/': out->push_back('/'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'u': {
        if (pos_ + 4 > text_.size()) return fail_at(pos_ - 2, "truncated \\u escape");
        unsigned v = 0;
        for (size_t i = 0; i < 4; ++i) {
          const char h = text_[pos_ + i];
          v <<= 4;
          if (h >= '0' && h <= '9') {
            v |= static_cast<unsigned>(h - '0');
          } else if (h >= 'a' && h <= 'f') {
            v |= static_cast<unsigned>(h - 'a' + 10);
          } else if (h >= 'A' && h <= 'F') {
            v |= static_cast<unsigned>(h - 'A' + 10);
          } else {
            return fail_at(pos_ - 2, "bad \\u escape (expected 4 hex digits)");
          }
        }
        if (v >= 0x80) return fail_at(pos_ - 2, "\\u escape above 0x7f (no field of this format needs one)");
        out->push_back(static_cast<char>(v));
        pos_ += 4;
        break;
      }
      default:
        return fail_at(pos_ - 2, fmt::format("unknown escape '\\{}'", e));
    }
  }
}

bool Cursor::parse_u64(uint64_t* out) {
  if (!ok()) return false;
  skip_ws();
  const size_t start = pos_;
  if (pos_ < text_.size() && text_[pos_] == '-') return fail("expected an unsigned integer, found a negative number");
  uint64_t v = 0;
  while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
    const auto d = static_cast<uint64_t>(text_[pos_] - '0');
    if (v > (UINT64_MAX - d) / 10) return fail_at(start, "integer does not fit in 64 bits");
    v = v * 10 + d;
    ++pos_;
  }
  if (pos_ == start) return fail(fmt::format("expected an unsigned integer, found {}", found()));
  if (text_[start] == '0' && pos_ - start > 1) return fail_at(start, "integer with a leading zero");
  if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
    return fail_at(start, "expected an unsigned integer, found a fraction or exponent");
  }
  *out = v;
  return true;
}

bool Cursor::parse_bool(bool* out) {
  if (!ok()) return false;
  skip_ws();
  const std::string_view rest = text_.substr(pos_);
  if (rest.starts_with("true")) {
    pos_ += 4;
    *out = true;
    return true;
  }
  if (rest.starts_with("false")) {
    pos_ += 5;
    *out = false;
    return true;
  }
  return fail(fmt::format("expected true or false, found {}", found()));
}

bool Cursor::expect_end() {
  if (!ok()) return false;
  skip_ws();
  if (pos_ != text_.size()) return fail(fmt::format("unexpected {} after the end of the JSON value", found()));
  return true;
}

}  // namespace pandora::history::json
