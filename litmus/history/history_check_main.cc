// pandora-history-check: checks recorded transaction histories for (strict)
// serializability and optionally exports them for Elle and dbcop.
//
//   pandora-history-check run.p0.hist run.p1.hist --export-elle run.edn
//
// Exit status: 0 no anomalies, 1 anomalies found, 2 bad input (unreadable
// or malformed history, bad arguments, failed export).
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/options.h"
#include "litmus/history/checker.h"
#include "litmus/history/export_dbcop.h"
#include "litmus/history/export_elle.h"
#include "compute/trace/history.h"
#include "litmus/history/report.h"

namespace {

using namespace pandora;
using namespace pandora::history;

constexpr int kClean = 0;
constexpr int kAnomalies = 1;
constexpr int kBadInput = 2;

struct Config {
  std::string format = "text";
  std::string export_elle;
  std::string export_dbcop;
  bool no_realtime = false;
  bool partial = false;
};

// OptionSet takes only --name options; the history files are the
// arguments that are neither an option nor an option's value.
bool takes_value(std::string_view arg) {
  return arg == "--format" || arg == "--export-elle" || arg == "--export-dbcop" || arg == "--config";
}

Status write_export(const std::string& path, const History& history, Status (*exporter)(const History&, std::FILE*),
                    std::string_view what) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status(Errc::kIo, fmt::format("cannot create {} export '{}'", what, path));
  Status s = exporter(history, f);
  if (std::fclose(f) != 0 && s.is_ok()) s = Status(Errc::kIo, fmt::format("writing {} export '{}' failed", what, path));
  return s;
}

int run(int argc, char** argv) {
  Config cfg;
  OptionSet options("pandora-history-check",
                    "Checks transaction histories (JSON lines written by HistoryWriter) for strict serializability.\n"
                    "Arguments: FILE... the history files (one per compute process), checked as one history.\n"
                    "Exit status: 0 no anomalies, 1 anomalies found, 2 bad input.");
  options.add_choice("format", &cfg.format, {"text", "json"}, "report format");
  options.add_string("export-elle", &cfg.export_elle, "also write the history for Elle's rw-register checker (EDN)");
  options.add_string("export-dbcop", &cfg.export_dbcop, "also write the history in dbcop's JSON format");
  options.add_flag("no-realtime", &cfg.no_realtime,
                   "check serializability only (no real-time edges, so no strict-serializability violations)");
  options.add_flag("partial", &cfg.partial,
                   "the history lacks some writers (recovery rolled transactions forward): do not report reads of "
                   "versions no recorded transaction wrote (they still get stand-in writers, ordered by version)");

  std::vector<std::string> files;
  std::vector<const char*> flags = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (takes_value(arg) && i + 1 < argc) {
      flags.push_back(argv[i]);
      flags.push_back(argv[++i]);
    } else if (arg.starts_with("-") && arg != "-") {
      flags.push_back(argv[i]);
    } else {
      files.emplace_back(arg);
    }
  }
  std::string message;
  switch (options.parse(static_cast<int>(flags.size()), flags.data(), &message)) {
    case OptionSet::Outcome::kHelp:
      std::fputs(message.c_str(), stdout);
      return kClean;
    case OptionSet::Outcome::kError:
      std::fprintf(stderr, "pandora-history-check: %s\n", message.c_str());
      return kBadInput;
    case OptionSet::Outcome::kRun:
      break;
  }
  if (files.empty()) {
    std::fprintf(stderr, "pandora-history-check: no history file given (see --help)\n");
    return kBadInput;
  }

  // Every file's header first: the checker needs the run's initial state
  // before the first transaction.
  History history;  // transactions kept only for the exports
  std::vector<std::unique_ptr<HistoryReader>> readers;
  for (const std::string& file : files) {
    auto reader = HistoryReader::open(file);
    if (!reader.is_ok()) {
      std::fprintf(stderr, "pandora-history-check: %s\n", reader.status().message().c_str());
      return kBadInput;
    }
    if (Status s = history.initial.merge((*reader)->initial(), file); !s) {
      std::fprintf(stderr, "pandora-history-check: %s\n", s.message().c_str());
      return kBadInput;
    }
    readers.push_back(std::move(*reader));
  }

  CheckOptions check_options;
  check_options.realtime = !cfg.no_realtime;
  check_options.complete = !cfg.partial;
  Checker checker(check_options, history.initial);
  const bool exporting = !cfg.export_elle.empty() || !cfg.export_dbcop.empty();
  for (const auto& reader : readers) {
    TxnTrace t;
    while (true) {
      Result<bool> got = reader->next(&t);
      if (!got.is_ok()) {
        std::fprintf(stderr, "pandora-history-check: %s\n", got.status().message().c_str());
        return kBadInput;
      }
      if (!got.value()) break;
      checker.add(t);
      if (exporting) history.txns.push_back(std::move(t));
    }
  }

  if (!cfg.export_elle.empty()) {
    if (Status s = write_export(cfg.export_elle, history, &export_elle, "Elle"); !s.is_ok()) {
      std::fprintf(stderr, "pandora-history-check: %s\n", s.message().c_str());
      return kBadInput;
    }
  }
  if (!cfg.export_dbcop.empty()) {
    if (Status s = write_export(cfg.export_dbcop, history, &export_dbcop, "dbcop"); !s.is_ok()) {
      std::fprintf(stderr, "pandora-history-check: %s\n", s.message().c_str());
      return kBadInput;
    }
  }

  const Report report = checker.finish();
  const std::string text = cfg.format == "json" ? format_report_json(report) : format_report_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return report.clean() ? kClean : kAnomalies;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
