#include "common/options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace pandora {
namespace {

constexpr std::string_view kConfigName = "config";
constexpr std::string_view kHelpName = "help";
constexpr std::string_view kSizeForms = "a size such as 4096, 64K, 64M, 2G or 1T";

Status invalid(std::string message) { return Status(Errc::kInvalidArgument, std::move(message)); }

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

// Accumulates digits of `base` into *out; false on a non-digit or overflow.
bool accumulate(std::string_view digits, unsigned base, uint64_t* out, bool* overflow) {
  uint64_t v = 0;
  for (char c : digits) {
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (base == 16 && lower(c) >= 'a' && lower(c) <= 'f') {
      d = static_cast<unsigned>(lower(c) - 'a' + 10);
    } else {
      return false;
    }
    if (v > (UINT64_MAX - d) / base) {
      *overflow = true;
      return false;
    }
    v = v * base + d;
  }
  *out = v;
  return true;
}

// "64M" when the value is an exact binary multiple, else plain decimal.
std::string size_text(uint64_t v) {
  static constexpr std::pair<int, char> kUnits[] = {{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}};
  if (v != 0) {
    for (const auto& [shift, unit] : kUnits) {
      if (v % (uint64_t{1} << shift) == 0) return fmt::format("{}{}", v >> shift, unit);
    }
  }
  return std::to_string(v);
}

std::string range_text(uint64_t min, uint64_t max, std::string (*show)(uint64_t)) {
  if (min > 0 && max < UINT64_MAX) return fmt::format("between {} and {}", show(min), show(max));
  if (min > 0) return fmt::format("at least {}", show(min));
  if (max < UINT64_MAX) return fmt::format("at most {}", show(max));
  return {};
}

std::string decimal_text(uint64_t v) { return std::to_string(v); }

Result<bool> parse_bool(std::string_view v) {
  for (std::string_view t : {"true", "1", "yes", "on"}) {
    if (iequals(v, t)) return true;
  }
  for (std::string_view f : {"false", "0", "no", "off"}) {
    if (iequals(v, f)) return false;
  }
  return invalid(fmt::format("expected true or false, got '{}'", v));
}

// Optimal-string-alignment distance: insertions, deletions, substitutions and
// swaps of adjacent characters each cost 1, the usual shapes of a typo.
size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t w = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * w);
  for (size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t v = std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) v = std::min(v, d[(i - 2) * w + j - 2] + 1);
      d[i * w + j] = v;
    }
  }
  return d[a.size() * w + b.size()];
}

}  // namespace

Result<uint64_t> parse_u64(std::string_view text) {
  if (text.empty()) return invalid("expected a non-negative integer, got an empty value");
  std::string_view digits = text;
  unsigned base = 10;
  if (text.size() >= 2 && text[0] == '0' && lower(text[1]) == 'x') {
    digits = text.substr(2);
    base = 16;
    if (digits.empty()) return invalid(fmt::format("expected hex digits after '0x' in '{}'", text));
  }
  uint64_t v = 0;
  bool overflow = false;
  if (!accumulate(digits, base, &v, &overflow)) {
    if (overflow) return invalid(fmt::format("'{}' is too large (the maximum is {})", text, UINT64_MAX));
    return invalid(fmt::format("expected a non-negative decimal or 0x-prefixed hex integer, got '{}'", text));
  }
  return v;
}

Result<uint64_t> parse_size(std::string_view text) {
  if (text.empty()) return invalid(fmt::format("expected {}, got an empty value", kSizeForms));
  if (text.size() >= 2 && text[0] == '0' && lower(text[1]) == 'x') return parse_u64(text);
  std::string_view digits = text;
  int shift = 0;
  switch (lower(text.back())) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    case 't': shift = 40; break;
    default: break;
  }
  if (shift != 0) digits.remove_suffix(1);
  uint64_t v = 0;
  bool overflow = false;
  if (digits.empty() || !accumulate(digits, 10, &v, &overflow)) {
    if (overflow) return invalid(fmt::format("size '{}' is too large", text));
    return invalid(fmt::format("expected {}, got '{}'", kSizeForms, text));
  }
  if (shift != 0 && v > (UINT64_MAX >> shift)) return invalid(fmt::format("size '{}' is too large", text));
  return v << shift;
}

OptionSet::OptionSet(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void OptionSet::add_string(std::string name, std::string* target, std::string help, bool required) {
  Option o;
  o.name = std::move(name);
  o.help = std::move(help);
  o.default_text = *target;
  o.current = [target] { return *target; };
  o.required = required;
  o.apply = [target](std::string_view v) {
    *target = std::string(v);
    return Status::ok();
  };
  options_.push_back(std::move(o));
}

void OptionSet::add_u64(std::string name, uint64_t* target, std::string help, uint64_t min, uint64_t max,
                        bool required) {
  Option o;
  o.name = std::move(name);
  const std::string range = range_text(min, max, &decimal_text);
  o.help = range.empty() ? std::move(help) : fmt::format("{} ({})", help, range);
  o.default_text = std::to_string(*target);
  o.current = [target] { return std::to_string(*target); };
  o.required = required;
  o.apply = [target, min, max, range](std::string_view v) -> Status {
    Result<uint64_t> r = parse_u64(v);
    if (!r) return r.status();
    if (*r < min || *r > max) return invalid(fmt::format("must be {}, got {}", range, *r));
    *target = *r;
    return Status::ok();
  };
  options_.push_back(std::move(o));
}

void OptionSet::add_size(std::string name, uint64_t* target, std::string help, uint64_t min, uint64_t max,
                         bool required) {
  Option o;
  o.name = std::move(name);
  const std::string range = range_text(min, max, &size_text);
  o.help = range.empty() ? std::move(help) : fmt::format("{} ({})", help, range);
  o.default_text = size_text(*target);
  o.current = [target] { return size_text(*target); };
  o.required = required;
  o.apply = [target, min, max, range](std::string_view v) -> Status {
    Result<uint64_t> r = parse_size(v);
    if (!r) return r.status();
    if (*r < min || *r > max) return invalid(fmt::format("must be {}, got {}", range, v));
    *target = *r;
    return Status::ok();
  };
  options_.push_back(std::move(o));
}

void OptionSet::add_flag(std::string name, bool* target, std::string help) {
  Option o;
  o.name = std::move(name);
  o.help = std::move(help);
  o.default_text = *target ? "true" : "false";
  o.current = [target] { return std::string(*target ? "true" : "false"); };
  o.is_flag = true;
  o.apply = [target](std::string_view v) -> Status {
    Result<bool> r = parse_bool(v);
    if (!r) return r.status();
    *target = *r;
    return Status::ok();
  };
  options_.push_back(std::move(o));
}

void OptionSet::add_choice(std::string name, std::string* target, std::vector<std::string> choices,
                           std::string help) {
  Option o;
  o.name = std::move(name);
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  o.help = fmt::format("{} (one of: {})", help, list);
  o.default_text = *target;
  o.current = [target] { return *target; };
  o.apply = [target, choices = std::move(choices), list](std::string_view v) -> Status {
    if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
      return invalid(fmt::format("expected one of {}, got '{}'", list, v));
    }
    *target = std::string(v);
    return Status::ok();
  };
  options_.push_back(std::move(o));
}

OptionSet::Option* OptionSet::find(std::string_view name) {
  for (Option& o : options_) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

bool OptionSet::was_set(std::string_view name) const {
  for (const Option& o : options_) {
    if (o.name == name) return o.set;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> OptionSet::values() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(options_.size());
  for (const Option& o : options_) out.emplace_back(o.name, o.current());
  return out;
}

// `origin` is empty for the command line (options are shown as --name) and
// "FILE:LINE" for a config file (options are shown as they are written there).
Status OptionSet::apply(std::string_view name, std::string_view value, bool has_value, std::string_view origin) {
  const std::string shown = origin.empty() ? fmt::format("--{}", name) : fmt::format("{}: {}", origin, name);
  Option* o = find(name);
  if (o == nullptr) {
    std::string message = origin.empty() ? fmt::format("unknown option --{}", name)
                                         : fmt::format("{}: unknown option '{}'", origin, name);
    // Suggest the closest known name when it is plausibly a typo of it.
    std::string_view best;
    size_t best_distance = SIZE_MAX;
    auto consider = [&](std::string_view candidate) {
      const size_t d = edit_distance(name, candidate);
      if (d < best_distance) {
        best_distance = d;
        best = candidate;
      }
    };
    for (const Option& known : options_) consider(known.name);
    if (origin.empty()) {
      consider(kConfigName);
      consider(kHelpName);
    }
    const size_t allowed = std::clamp<size_t>(name.size() / 3, 1, 3);
    if (!best.empty() && best_distance <= allowed) {
      message += origin.empty() ? fmt::format(" (did you mean --{}?)", best)
                                : fmt::format(" (did you mean '{}'?)", best);
    }
    return invalid(std::move(message));
  }
  if (!has_value) {
    if (!o->is_flag) return invalid(fmt::format("{} needs a value", shown));
    value = "true";
  }
  Status s = o->apply(value);
  if (!s) return invalid(fmt::format("{}: {}", shown, s.message()));
  o->set = true;
  return Status::ok();
}

namespace {

// The value with one pair of matching surrounding quotes ("..." or '...')
// removed; anything else (no quotes, one quote, mismatched quotes) as is.
std::string_view unquote(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    return v.substr(1, v.size() - 2);
  }
  return v;
}

// Where the line's comment starts ('#' at the start or after a blank), or
// npos. Inside a quoted value (one starting with a quote right after '=')
// a '#' is part of the value, up to the closing quote.
size_t comment_start(std::string_view line) {
  char quote = 0;
  bool after_eq = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return i;
    if (c == '=' && !after_eq) {
      after_eq = true;
      size_t j = i + 1;
      while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
      if (j < line.size() && (line[j] == '"' || line[j] == '\'')) {
        quote = line[j];
        i = j;
      }
    }
  }
  return std::string_view::npos;
}

}  // namespace

Status OptionSet::parse_config_text(std::string_view text, std::string_view origin) {
  size_t line_no = 0;
  std::vector<std::pair<std::string, size_t>> seen;  // name -> line that set it
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    // '#' starts a comment at the start of a line or after blanks, so a value
    // such as a path may still contain one ("dir = /tmp/run#1").
    line = line.substr(0, comment_start(line));
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", origin, line_no);
    const size_t eq = line.find('=');
    std::string_view name = trim(line.substr(0, eq));
    const bool has_value = eq != std::string_view::npos;
    const std::string_view value = has_value ? unquote(trim(line.substr(eq + 1))) : std::string_view();
    if (name.starts_with("--")) name.remove_prefix(2);  // tolerate a pasted flag
    if (name.empty()) return invalid(fmt::format("{}: expected 'name = value', got '{}'", where, line));
    if (name == kConfigName) return invalid(fmt::format("{}: a config file cannot include another one", where));
    // A second line for one name is almost always an editing mistake; taking
    // either silently would hide it.
    for (const auto& [n, at] : seen) {
      if (n == name) {
        return invalid(fmt::format("{}: '{}' is set twice, at line {} and at line {}; keep one of them", where,
                                   name, at, line_no));
      }
    }
    seen.emplace_back(std::string(name), line_no);
    Status s = apply(name, value, has_value, where);
    if (!s) return s;
  }
  return Status::ok();
}

Result<std::string> read_config_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not hang; it is refused below anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return invalid(fmt::format("--config: cannot open '{}': {}", path, std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return invalid(fmt::format("--config: cannot stat '{}': {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    return invalid(fmt::format("--config: '{}' is not a regular file ({}); give a file of 'name = value' lines",
                               path, S_ISDIR(st.st_mode) ? "a directory" : "a device, pipe or socket"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) {
    return invalid(fmt::format("--config: '{}' is {} bytes; a config file may have at most {} bytes", path,
                               st.st_size, kMaxConfigBytes));
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return invalid(fmt::format("--config: cannot read '{}': {}", path, std::strerror(errno)));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    // The size was checked, but a file may grow while we read it.
    if (text.size() > kMaxConfigBytes) {
      return invalid(fmt::format("--config: '{}' has more than {} bytes", path, kMaxConfigBytes));
    }
  }
  return text;
}

OptionSet::Outcome OptionSet::parse(int argc, const char* const* argv, std::string* message) {
  struct Given {
    std::string name;
    std::string value;
    bool has_value;
  };
  std::vector<Given> given;
  std::string config_path;
  bool have_config = false;
  bool want_help = false;
  std::string error;  // the first problem; scanning goes on so --help still wins
  auto fail = [&error](std::string m) {
    if (error.empty()) error = std::move(m);
  };

  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      want_help = true;
      continue;
    }
    if (!arg.starts_with("--") || arg == "--") {
      if (arg.starts_with("-") && arg != "-" && arg != "--") {
        fail(fmt::format("unknown option '{}' (options are written --name)", arg));
      } else {
        fail(fmt::format("unexpected argument '{}' (options are written --name VALUE)", arg));
      }
      continue;
    }
    const std::string_view body = arg.substr(2);
    const size_t eq = body.find('=');
    const std::string name(body.substr(0, eq));
    const bool inline_value = eq != std::string_view::npos;
    std::string value = inline_value ? std::string(body.substr(eq + 1)) : std::string();

    if (name == kHelpName) {
      fail("--help takes no value");
      continue;
    }
    const Option* o = name == kConfigName ? nullptr : find(name);
    const bool needs_value = name == kConfigName || (o != nullptr && !o->is_flag);
    bool has_value = inline_value;
    if (needs_value && !has_value) {
      // A following "--x" is another option, not this one's value; a value
      // that really starts with "--" can be given as --name=--x.
      if (i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--")) {
        value = argv[++i];
        has_value = true;
      } else {
        fail(fmt::format("--{} needs a value", name));
        continue;
      }
    }
    if (name == kConfigName) {
      if (have_config) fail("--config given more than once");
      config_path = value;
      have_config = true;
      continue;
    }
    if (o == nullptr) {
      fail(apply(name, value, has_value, "").message());  // the unknown-option message
      continue;
    }
    given.push_back({name, std::move(value), has_value});
  }

  if (want_help) {
    *message = help();
    return Outcome::kHelp;
  }
  if (!error.empty()) {
    *message = std::move(error);
    return Outcome::kError;
  }

  // The file first, then the flags, so flags win wherever they appear.
  if (have_config) {
    Result<std::string> text = read_config_file(config_path);
    if (!text) {
      *message = text.status().message();
      return Outcome::kError;
    }
    Status s = parse_config_text(*text, config_path);
    if (!s) {
      *message = s.message();
      return Outcome::kError;
    }
  }
  for (const Given& g : given) {
    Status s = apply(g.name, g.value, g.has_value, "");
    if (!s) {
      *message = s.message();
      return Outcome::kError;
    }
  }

  std::string missing;
  const bool waived = !waiver_.empty() && was_set(waiver_);
  for (const Option& o : options_) {
    if (!waived && o.required && !o.set) missing += fmt::format("{}--{} ({})", missing.empty() ? "" : ", ", o.name, o.help);
  }
  if (!missing.empty()) {
    *message = fmt::format("missing required option{}: {}", missing.find(", --") == std::string::npos ? "" : "s",
                           missing);
    return Outcome::kError;
  }
  return Outcome::kRun;
}

std::string OptionSet::help() const {
  struct Line {
    std::string name;  // sort key
    std::string left;
    std::string right;
  };
  std::vector<Line> lines;
  for (const Option& o : options_) {
    std::string right = o.help;
    if (o.required) {
      right += " [required]";
    } else if (!o.default_text.empty()) {
      right += fmt::format(" [default: {}]", o.default_text);
    }
    lines.push_back({o.name, o.is_flag ? fmt::format("--{}", o.name) : fmt::format("--{} VALUE", o.name), right});
  }
  lines.push_back({std::string(kConfigName), "--config FILE",
                   "read options from FILE ('name = value' lines, # comments); flags override it"});
  lines.push_back({std::string(kHelpName), "--help, -h", "print this help and exit"});
  std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.name < b.name; });

  constexpr size_t kMaxColumn = 28;
  size_t column = 0;
  for (const Line& l : lines) {
    if (l.left.size() <= kMaxColumn) column = std::max(column, l.left.size());
  }
  std::string out = fmt::format("Usage: {} [options]\n", program_);
  if (!summary_.empty()) out += summary_ + "\n";
  out += "\nOptions:\n";
  for (const Line& l : lines) {
    if (l.left.size() <= column) {
      out += fmt::format("  {:<{}}  {}\n", l.left, column, l.right);
    } else {
      out += fmt::format("  {}\n  {:<{}}  {}\n", l.left, "", column, l.right);
    }
  }
  out += "\nFlags override values from --config. Boolean options accept --name, --name=true, --name=false.\n";
  return out;
}

}  // namespace pandora
