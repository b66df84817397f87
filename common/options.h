// Command-line and config-file options, declared once per binary.
//
// Every binary declares its options on an OptionSet, bound to fields of its
// own config struct, then calls parse(). The same names work as flags
// (`--size 64M` or `--size=64M`) and as `name = value` lines of a file given
// with `--config FILE` ('#' at the start of a line or after a blank starts a
// comment). In the file, one pair of matching quotes around a value is
// removed (`name = "a b"` is `a b`; a '#' inside them is part of the value),
// and a name given on two lines is an error naming both lines. The file
// must be a regular file of at most kMaxConfigBytes. Flags override the file.
// `--help` prints the generated help. Unknown names, malformed values, values
// out of range and missing required options are errors whose message says
// which option and what was expected.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace pandora {

// Parses "4096", "64K", "64M", "2G", "1T" (binary multiples). Overflow and
// trailing garbage are errors.
Result<uint64_t> parse_size(std::string_view text);
// Parses a non-negative decimal or 0x-prefixed hex integer.
Result<uint64_t> parse_u64(std::string_view text);

// Largest --config file accepted.
inline constexpr uint64_t kMaxConfigBytes = 1u << 20;

// The content of the --config file `path`: kInvalidArgument (message
// starting "--config:") unless it is a readable regular file of at most
// kMaxConfigBytes.
Result<std::string> read_config_file(const std::string& path);

class OptionSet {
 public:
  OptionSet(std::string program, std::string summary);

  // Each add_* binds an option to `target`; the target's current value is the
  // default and is shown in --help.
  void add_string(std::string name, std::string* target, std::string help, bool required = false);
  void add_u64(std::string name, uint64_t* target, std::string help, uint64_t min = 0,
               uint64_t max = UINT64_MAX, bool required = false);
  void add_size(std::string name, uint64_t* target, std::string help, uint64_t min = 0,
                uint64_t max = UINT64_MAX, bool required = false);
  void add_flag(std::string name, bool* target, std::string help);
  // One of `choices`.
  void add_choice(std::string name, std::string* target, std::vector<std::string> choices,
                  std::string help);

  // A command line that sets flag `name` (a query that connects to nothing,
  // such as pandora-bench --plan) needs none of the required options.
  void waive_required_with(std::string name) { waiver_ = std::move(name); }

  enum class Outcome { kRun, kHelp, kError };

  // Parses argv (argv[0] is skipped). On kHelp the help text is in *message;
  // on kError the error is. `--config FILE` is handled here.
  Outcome parse(int argc, const char* const* argv, std::string* message);

  // Parses `name = value` lines; used by parse() for --config and by tests.
  Status parse_config_text(std::string_view text, std::string_view origin);

  std::string help() const;

  // Whether the option was given (flag or file), as opposed to defaulted.
  bool was_set(std::string_view name) const;

  // Every option's name and current value (sizes as "64M", flags as
  // "true"/"false"), in declaration order: what a run records as its
  // configuration. Reads the bound targets, so call it while they live.
  std::vector<std::pair<std::string, std::string>> values() const;

 private:
  struct Option {
    std::string name;
    std::string help;
    std::string default_text;
    bool required = false;
    bool is_flag = false;
    bool set = false;
    std::function<Status(std::string_view)> apply;
    std::function<std::string()> current;  // the target's value as text
  };
  Option* find(std::string_view name);
  Status apply(std::string_view name, std::string_view value, bool has_value, std::string_view origin);

  std::string program_;
  std::string summary_;
  std::vector<Option> options_;
  std::string waiver_;
};

}  // namespace pandora
