#include "common/options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>

namespace pandora {
namespace {

// The parsed value, or a failed expectation naming the input.
uint64_t u64(std::string_view text) {
  Result<uint64_t> r = parse_u64(text);
  EXPECT_TRUE(r.is_ok()) << text << ": " << r.status().to_string();
  return r.is_ok() ? *r : ~uint64_t{0} - 1;
}

uint64_t size(std::string_view text) {
  Result<uint64_t> r = parse_size(text);
  EXPECT_TRUE(r.is_ok()) << text << ": " << r.status().to_string();
  return r.is_ok() ? *r : ~uint64_t{0} - 1;
}

TEST(ParseU64, DecimalAndHex) {
  EXPECT_EQ(u64("0"), 0u);
  EXPECT_EQ(u64("42"), 42u);
  EXPECT_EQ(u64("007"), 7u);
  EXPECT_EQ(u64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(u64("0x10"), 16u);
  EXPECT_EQ(u64("0XfF"), 255u);
  EXPECT_EQ(u64("0xffffffffffffffff"), UINT64_MAX);
}

TEST(ParseU64, Errors) {
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1.5", "abc", "12a", "0x", "0xg", "1e3", "0b101"}) {
    Result<uint64_t> r = parse_u64(bad);
    ASSERT_FALSE(r.is_ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
  }
  for (const char* big : {"18446744073709551616", "99999999999999999999", "0x10000000000000000"}) {
    Result<uint64_t> r = parse_u64(big);
    ASSERT_FALSE(r.is_ok()) << big;
    EXPECT_NE(r.status().message().find("too large"), std::string::npos) << r.status().message();
  }
}

TEST(ParseSize, Suffixes) {
  EXPECT_EQ(size("4096"), 4096u);
  EXPECT_EQ(size("0"), 0u);
  EXPECT_EQ(size("64K"), 64u << 10);
  EXPECT_EQ(size("64k"), 64u << 10);
  EXPECT_EQ(size("64M"), 64u << 20);
  EXPECT_EQ(size("2G"), 2ull << 30);
  EXPECT_EQ(size("1T"), 1ull << 40);
  EXPECT_EQ(size("0x1000"), 4096u);
  EXPECT_EQ(size("16777215T"), 16777215ull << 40);  // largest that fits
}

TEST(ParseSize, Errors) {
  for (const char* bad : {"", "K", "64Q", "64KB", "64 M", "-1M", "1.5G", "M64", "0x"}) {
    Result<uint64_t> r = parse_size(bad);
    ASSERT_FALSE(r.is_ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
  }
  for (const char* big : {"16777216T", "18446744073709551616", "99999999999999999999K"}) {
    Result<uint64_t> r = parse_size(big);
    ASSERT_FALSE(r.is_ok()) << big;
    EXPECT_NE(r.status().message().find("too large"), std::string::npos) << r.status().message();
  }
}

// A program with one option of every kind.
struct Config {
  std::string name = "node";
  std::string secret_file;
  uint64_t threads = 4;
  uint64_t size = 64ull << 20;
  bool verbose = false;
  bool pmem = true;
  std::string mode = "pandora";
};

class Options : public ::testing::Test {
 protected:
  Options() : set_("pandora-test", "Exercises every kind of option.") {
    set_.add_string("name", &c_.name, "node name");
    set_.add_string("secret-file", &c_.secret_file, "file holding the cluster secret", true);
    set_.add_u64("threads", &c_.threads, "worker threads", 1, 64);
    set_.add_size("region-size", &c_.size, "region size", 64 << 10, 1ull << 40);
    set_.add_flag("verbose", &c_.verbose, "log more");
    set_.add_flag("pmem", &c_.pmem, "treat the region as persistent memory");
    set_.add_choice("mode", &c_.mode, {"pandora", "ford", "log-a-latch"}, "protocol");
  }

  OptionSet::Outcome run(std::initializer_list<const char*> args) {
    std::vector<const char*> argv = {"pandora-test"};
    argv.insert(argv.end(), args.begin(), args.end());
    message_.clear();
    return set_.parse(static_cast<int>(argv.size()), argv.data(), &message_);
  }

  // Runs and expects an error mentioning every one of `needles`.
  void expect_error(std::initializer_list<const char*> args, std::initializer_list<const char*> needles) {
    ASSERT_EQ(run(args), OptionSet::Outcome::kError) << *args.begin();
    for (const char* n : needles) {
      EXPECT_NE(message_.find(n), std::string::npos) << "'" << n << "' not in: " << message_;
    }
  }

  Config c_;
  OptionSet set_;
  std::string message_;
};

TEST_F(Options, DefaultsStayWhenOnlyRequiredGiven) {
  ASSERT_EQ(run({"--secret-file", "/s"}), OptionSet::Outcome::kRun) << message_;
  EXPECT_EQ(c_.secret_file, "/s");
  EXPECT_EQ(c_.name, "node");
  EXPECT_EQ(c_.threads, 4u);
  EXPECT_EQ(c_.size, 64ull << 20);
  EXPECT_FALSE(c_.verbose);
  EXPECT_TRUE(c_.pmem);
  EXPECT_EQ(c_.mode, "pandora");
  EXPECT_TRUE(set_.was_set("secret-file"));
  EXPECT_FALSE(set_.was_set("threads"));
  EXPECT_FALSE(set_.was_set("no-such-option"));
}

TEST_F(Options, SpaceAndEqualsForms) {
  ASSERT_EQ(run({"--secret-file=/s", "--name", "n1", "--threads=8", "--region-size", "2G", "--mode=ford"}),
            OptionSet::Outcome::kRun)
      << message_;
  EXPECT_EQ(c_.name, "n1");
  EXPECT_EQ(c_.threads, 8u);
  EXPECT_EQ(c_.size, 2ull << 30);
  EXPECT_EQ(c_.mode, "ford");
  EXPECT_TRUE(set_.was_set("name"));
}

TEST_F(Options, ValuesMayContainEqualsAndDashes) {
  ASSERT_EQ(run({"--secret-file", "/s", "--name", "a=b", "--threads", "0x10"}), OptionSet::Outcome::kRun) << message_;
  EXPECT_EQ(c_.name, "a=b");
  EXPECT_EQ(c_.threads, 16u);
  ASSERT_EQ(run({"--secret-file", "/s", "--name=--odd", "--mode=log-a-latch"}), OptionSet::Outcome::kRun) << message_;
  EXPECT_EQ(c_.name, "--odd");
  ASSERT_EQ(run({"--secret-file", "/s", "--name", "-x"}), OptionSet::Outcome::kRun) << message_;
  EXPECT_EQ(c_.name, "-x");
  ASSERT_EQ(run({"--secret-file", "/s", "--name="}), OptionSet::Outcome::kRun) << message_;
  EXPECT_EQ(c_.name, "");
}

TEST_F(Options, BooleanFlags) {
  ASSERT_EQ(run({"--secret-file", "/s", "--verbose", "--pmem=false"}), OptionSet::Outcome::kRun) << message_;
  EXPECT_TRUE(c_.verbose);
  EXPECT_FALSE(c_.pmem);
  ASSERT_EQ(run({"--secret-file", "/s", "--verbose=false", "--pmem=true"}), OptionSet::Outcome::kRun) << message_;
  EXPECT_FALSE(c_.verbose);
  EXPECT_TRUE(c_.pmem);
  ASSERT_EQ(run({"--secret-file", "/s", "--verbose=1", "--pmem=no"}), OptionSet::Outcome::kRun) << message_;
  EXPECT_TRUE(c_.verbose);
  EXPECT_FALSE(c_.pmem);
  expect_error({"--secret-file", "/s", "--verbose=maybe"}, {"--verbose", "true or false", "maybe"});
  // A flag never takes the next argument as its value.
  expect_error({"--secret-file", "/s", "--verbose", "false"}, {"unexpected argument 'false'"});
}

TEST_F(Options, LastOccurrenceWins) {
  ASSERT_EQ(run({"--secret-file", "/s", "--threads", "2", "--threads", "3"}), OptionSet::Outcome::kRun);
  EXPECT_EQ(c_.threads, 3u);
}

TEST_F(Options, RangeErrorsNameTheOptionAndTheRange) {
  expect_error({"--secret-file", "/s", "--threads", "0"}, {"--threads", "between 1 and 64", "got 0"});
  expect_error({"--secret-file", "/s", "--threads", "65"}, {"--threads", "between 1 and 64", "got 65"});
  EXPECT_EQ(run({"--secret-file", "/s", "--threads", "64"}), OptionSet::Outcome::kRun);
  EXPECT_EQ(run({"--secret-file", "/s", "--threads", "1"}), OptionSet::Outcome::kRun);
  expect_error({"--secret-file", "/s", "--region-size", "32K"}, {"--region-size", "between 64K and 1T", "32K"});
  expect_error({"--secret-file", "/s", "--region-size", "2T"}, {"--region-size", "between 64K and 1T"});
  EXPECT_EQ(run({"--secret-file", "/s", "--region-size", "64K"}), OptionSet::Outcome::kRun);
}

TEST_F(Options, MalformedValues) {
  expect_error({"--secret-file", "/s", "--threads", "four"}, {"--threads", "integer", "four"});
  expect_error({"--secret-file", "/s", "--threads=-1"}, {"--threads", "-1"});
  expect_error({"--secret-file", "/s", "--region-size", "64Q"}, {"--region-size", "64K", "64Q"});
  expect_error({"--secret-file", "/s", "--region-size", "99999999999T"}, {"--region-size", "too large"});
  expect_error({"--secret-file", "/s", "--mode", "fast"}, {"--mode", "one of pandora, ford, log-a-latch", "fast"});
}

TEST_F(Options, MissingValues) {
  expect_error({"--secret-file", "/s", "--threads"}, {"--threads needs a value"});
  expect_error({"--threads", "--secret-file", "/s"}, {"--threads needs a value"});
  expect_error({"--secret-file", "/s", "--config"}, {"--config needs a value"});
}

TEST_F(Options, UnknownOptionsSuggestTheClosestName) {
  expect_error({"--secret-file", "/s", "--thread", "2"}, {"unknown option --thread", "did you mean --threads?"});
  expect_error({"--secret-file", "/s", "--verbos"}, {"unknown option --verbos", "did you mean --verbose?"});
  expect_error({"--secret-file", "/s", "--region_size=1G"}, {"did you mean --region-size?"});
  expect_error({"--secret-file", "/s", "--hepl"}, {"did you mean --help?"});
  expect_error({"--secret-file", "/s", "--confg", "x"}, {"did you mean --config?"});
  // Nothing close: no suggestion.
  ASSERT_EQ(run({"--secret-file", "/s", "--completely-different"}), OptionSet::Outcome::kError);
  EXPECT_NE(message_.find("unknown option --completely-different"), std::string::npos) << message_;
  EXPECT_EQ(message_.find("did you mean"), std::string::npos) << message_;
}

TEST_F(Options, PositionalAndSingleDashArgumentsAreErrors) {
  expect_error({"--secret-file", "/s", "extra"}, {"unexpected argument 'extra'"});
  expect_error({"--secret-file", "/s", "-v"}, {"unknown option '-v'"});
  expect_error({"--secret-file", "/s", "--"}, {"unexpected argument '--'"});
  expect_error({"--secret-file", "/s", "-"}, {"unexpected argument '-'"});
}

TEST_F(Options, RequiredOptions) {
  expect_error({}, {"missing required option", "--secret-file", "cluster secret"});
  expect_error({"--threads", "2"}, {"--secret-file"});
}

TEST_F(Options, AWaivingFlagMakesRequiredOptionsOptional) {
  set_.waive_required_with("verbose");
  // Only when given: without it the requirement stands. (A parse marks what
  // it saw, so the cases run from least to most given.)
  expect_error({"--threads", "2"}, {"missing required option", "--secret-file"});
  // Other errors still count.
  expect_error({"--verbose", "--threads", "99"}, {"--threads"});
  EXPECT_EQ(run({"--verbose", "--threads", "2"}), OptionSet::Outcome::kRun) << message_;
  EXPECT_EQ(c_.threads, 2u);
}

TEST_F(Options, HelpWinsAndListsEverything) {
  for (auto args : {std::initializer_list<const char*>{"--help"}, {"-h"}, {"--threads", "999", "--help"},
                    {"--bogus", "-h"}}) {
    ASSERT_EQ(run(args), OptionSet::Outcome::kHelp) << *args.begin();
    EXPECT_EQ(message_, set_.help());
  }
  EXPECT_EQ(run({"--help=yes"}), OptionSet::Outcome::kError);

  const std::string h = set_.help();
  EXPECT_NE(h.find("Usage: pandora-test"), std::string::npos);
  EXPECT_NE(h.find("Exercises every kind of option."), std::string::npos);
  // Alphabetical, built-ins included.
  const char* order[] = {"--config", "--help", "--mode", "--name", "--pmem", "--region-size",
                         "--secret-file", "--threads", "--verbose"};
  size_t at = 0;
  for (const char* name : order) {
    const size_t found = h.find(std::string("  ") + name, at);
    ASSERT_NE(found, std::string::npos) << name << " missing or out of order in:\n" << h;
    at = found;
  }
  EXPECT_NE(h.find("worker threads (between 1 and 64) [default: 4]"), std::string::npos) << h;
  EXPECT_NE(h.find("region size (between 64K and 1T) [default: 64M]"), std::string::npos) << h;
  EXPECT_NE(h.find("protocol (one of: pandora, ford, log-a-latch) [default: pandora]"), std::string::npos) << h;
  EXPECT_NE(h.find("file holding the cluster secret [required]"), std::string::npos) << h;
  EXPECT_NE(h.find("log more [default: false]"), std::string::npos) << h;
  EXPECT_NE(h.find("[default: true]"), std::string::npos) << h;
  EXPECT_NE(h.find("--threads VALUE"), std::string::npos) << h;
  EXPECT_EQ(h.find("--verbose VALUE"), std::string::npos) << h;
}

TEST_F(Options, ConfigText) {
  const Status s = set_.parse_config_text(
      "# a comment\n"
      "\n"
      "   name = from-file   # trailing comment\n"
      "threads=12\n"
      "region-size = 1G\r\n"
      "verbose\n"
      "pmem = off\n"
      "mode = ford\n"
      "secret-file = /run/secret#1\n",
      "test.conf");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(c_.name, "from-file");
  EXPECT_EQ(c_.threads, 12u);
  EXPECT_EQ(c_.size, 1ull << 30);
  EXPECT_TRUE(c_.verbose);
  EXPECT_FALSE(c_.pmem);
  EXPECT_EQ(c_.mode, "ford");
  EXPECT_EQ(c_.secret_file, "/run/secret#1");  // '#' inside a value is not a comment
  EXPECT_TRUE(set_.was_set("threads"));
}

TEST_F(Options, ConfigTextErrorsNameFileAndLine) {
  const struct {
    const char* text;
    std::vector<const char*> needles;
  } cases[] = {
      {"threads = 2\nthreds = 3\n", {"test.conf:2", "unknown option 'threds'", "did you mean 'threads'?"}},
      {"\n\nthreads = 100\n", {"test.conf:3", "threads", "between 1 and 64", "100"}},
      {"threads\n", {"test.conf:1", "threads needs a value"}},
      {"= 5\n", {"test.conf:1", "expected 'name = value'"}},
      {"mode = quick\n", {"test.conf:1", "mode", "quick"}},
      {"config = other.conf\n", {"test.conf:1", "cannot include another"}},
      {"verbose = sometimes\n", {"test.conf:1", "true or false"}},
  };
  for (const auto& c : cases) {
    const Status s = set_.parse_config_text(c.text, "test.conf");
    ASSERT_FALSE(s.is_ok()) << c.text;
    EXPECT_EQ(s.code(), Errc::kInvalidArgument);
    for (const char* n : c.needles) EXPECT_NE(s.message().find(n), std::string::npos) << n << " not in " << s.message();
  }
}

TEST_F(Options, ConfigQuotesArePairedAndRemovedOnce) {
  const Status s = set_.parse_config_text(
      "name = \"two words # not a comment\"   # a comment\n"
      "secret-file = '/run/s e c'\n"
      "mode = \"ford\"\n",
      "test.conf");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(c_.name, "two words # not a comment");
  EXPECT_EQ(c_.secret_file, "/run/s e c");
  EXPECT_EQ(c_.mode, "ford");
  // One pair only, and only a matching one.
  ASSERT_TRUE(set_.parse_config_text("name = \"\"quoted\"\"\n", "a.conf").is_ok());
  EXPECT_EQ(c_.name, "\"quoted\"");
  ASSERT_TRUE(set_.parse_config_text("name = \"half\n", "b.conf").is_ok());
  EXPECT_EQ(c_.name, "\"half");
  ASSERT_TRUE(set_.parse_config_text("name = 'mixed\"\n", "c.conf").is_ok());
  EXPECT_EQ(c_.name, "'mixed\"");
}

TEST_F(Options, ConfigDuplicateKeyNamesBothLines) {
  const Status s = set_.parse_config_text("threads = 2\n# c\nname = a\n--threads = 3\n", "dup.conf");
  ASSERT_FALSE(s.is_ok());
  for (const char* n : {"dup.conf:4", "'threads'", "line 1", "line 4"}) {
    EXPECT_NE(s.message().find(n), std::string::npos) << n << " not in " << s.message();
  }
}

class OptionsWithFile : public Options {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pandora-options-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = (dir_ / "node.conf").string();
    std::ofstream(path_) << "secret-file = /from/file\nthreads = 8\nname = file-name\nverbose = true\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(OptionsWithFile, FileSuppliesValues) {
  ASSERT_EQ(run({"--config", path_.c_str()}), OptionSet::Outcome::kRun) << message_;
  EXPECT_EQ(c_.secret_file, "/from/file");  // a required option may come from the file
  EXPECT_EQ(c_.threads, 8u);
  EXPECT_EQ(c_.name, "file-name");
  EXPECT_TRUE(c_.verbose);
  EXPECT_TRUE(set_.was_set("threads"));
}

TEST_F(OptionsWithFile, FlagsOverrideTheFileWhateverTheOrder) {
  ASSERT_EQ(run({"--threads", "2", "--config", path_.c_str(), "--verbose=false"}), OptionSet::Outcome::kRun)
      << message_;
  EXPECT_EQ(c_.threads, 2u);
  EXPECT_FALSE(c_.verbose);
  EXPECT_EQ(c_.name, "file-name");
  ASSERT_EQ(run({std::string("--config=").append(path_).c_str(), "--name", "flag-name"}), OptionSet::Outcome::kRun)
      << message_;
  EXPECT_EQ(c_.name, "flag-name");
}

TEST_F(OptionsWithFile, FileErrors) {
  const std::string missing = (dir_ / "missing.conf").string();
  expect_error({"--config", missing.c_str()}, {"--config", "cannot open", "missing.conf"});
  expect_error({"--config", path_.c_str(), "--config", path_.c_str()}, {"--config given more than once"});
  const std::string bad = (dir_ / "bad.conf").string();
  std::ofstream(bad) << "name = x\nthreads = 0\n";
  expect_error({"--config", bad.c_str()}, {"bad.conf:2", "threads", "between 1 and 64"});
}

TEST_F(OptionsWithFile, ConfigMustBeABoundedRegularFile) {
  // A directory used to read as an empty file; /dev/zero never ended.
  expect_error({"--config", dir_.c_str()}, {"--config", "not a regular file", "directory"});
  expect_error({"--config", "/dev/zero"}, {"--config", "/dev/zero", "not a regular file"});
  const std::string big = (dir_ / "big.conf").string();
  {
    std::ofstream out(big);
    const std::string comment = "# " + std::string(1000, 'x') + "\n";
    for (uint64_t n = 0; n <= kMaxConfigBytes / comment.size(); ++n) out << comment;
  }
  expect_error({"--config", big.c_str()}, {"--config", "big.conf", "at most 1048576 bytes"});
  // Exactly at the limit is fine.
  {
    const std::string head = "secret-file = /x\n";
    std::ofstream out(big, std::ios::trunc);
    out << head << "#" << std::string(kMaxConfigBytes - head.size() - 2, 'y') << "\n";
  }
  ASSERT_EQ(std::filesystem::file_size(big), kMaxConfigBytes);
  EXPECT_EQ(run({"--config", big.c_str()}), OptionSet::Outcome::kRun) << message_;
}

}  // namespace
}  // namespace pandora
