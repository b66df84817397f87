#include "common/secret.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace pandora {
namespace {

class SecretFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pandora-secret-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& content, mode_t mode = 0600) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(SecretFile, StripsExactlyOneTrailingNewline) {
  const std::string k = "0123456789abcdef";  // kMinSecretBytes
  Result<std::string> s = read_secret_file(write("a", k + "\n"));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(*s, k);
  s = read_secret_file(write("b", k));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, k);
  s = read_secret_file(write("c", k + "\n\n"));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, k + "\n");
  const std::string binary(" sp\0ace 0123456789", 19);
  s = read_secret_file(write("d", binary));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, binary);
}

TEST_F(SecretFile, RefusesFilesOthersOrTheGroupMayRead) {
  const std::string k(32, 'k');
  EXPECT_TRUE(read_secret_file(write("private", k, 0600)).is_ok());
  EXPECT_TRUE(read_secret_file(write("read-only", k, 0400)).is_ok());
  for (mode_t mode : {0640, 0604, 0644, 0666}) {
    const std::string path = write("shared", k, mode);
    Result<std::string> s = read_secret_file(path);
    ASSERT_FALSE(s.is_ok()) << std::oct << mode;
    EXPECT_EQ(s.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(s.status().message().find(path), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find("chmod 600"), std::string::npos) << s.status().message();
  }
}

// Whoever may change the file chooses the secret: a file others may write,
// or one another user owns (planted in a shared directory before the
// cluster's scripts ran), is refused.
TEST_F(SecretFile, RefusesFilesOthersMayChange) {
  const std::string k(32, 'k');
  for (mode_t mode : {0620, 0602, 0622}) {
    const std::string path = write("writable", k, mode);
    Result<std::string> s = read_secret_file(path);
    ASSERT_FALSE(s.is_ok()) << std::oct << mode;
    EXPECT_EQ(s.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(s.status().message().find("writable by"), std::string::npos) << s.status().message();
  }
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  const std::string path = write("planted", k, 0600);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);  // nobody
  Result<std::string> s = read_secret_file(path);
  ASSERT_FALSE(s.is_ok()) << "a file another user owns was accepted";
  EXPECT_NE(s.status().message().find("belongs to uid 65534"), std::string::npos) << s.status().message();
}

TEST_F(SecretFile, RefusesSecretsShorterThan16Bytes) {
  for (const std::string& content : {std::string("s"), std::string("hunter2\n"), std::string(15, 'x'),
                                     std::string(15, 'x') + "\n"}) {
    const std::string path = write("short", content);
    Result<std::string> s = read_secret_file(path);
    ASSERT_FALSE(s.is_ok()) << content;
    EXPECT_EQ(s.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(s.status().message().find("at least 16"), std::string::npos) << s.status().message();
  }
  EXPECT_TRUE(read_secret_file(write("just-enough", std::string(16, 'x') + "\n")).is_ok());
}

TEST_F(SecretFile, PipesAreAcceptedWhateverTheirMode) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const std::string k(20, 'p');
  ASSERT_EQ(::write(p[1], k.data(), k.size()), static_cast<ssize_t>(k.size()));
  ::close(p[1]);
  Result<std::string> s = read_secret_file("/proc/self/fd/" + std::to_string(p[0]));
  ::close(p[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(*s, k);
}

TEST_F(SecretFile, LengthLimit) {
  EXPECT_TRUE(read_secret_file(write("max", std::string(4096, 'x'))).is_ok());
  EXPECT_TRUE(read_secret_file(write("max-nl", std::string(4096, 'x') + "\n")).is_ok());
  for (const std::string& content : {std::string(4097, 'x'), std::string(4097, 'x') + "\n", std::string(100000, 'y')}) {
    const std::string path = write("long", content);
    Result<std::string> s = read_secret_file(path);
    ASSERT_FALSE(s.is_ok()) << content.size();
    EXPECT_EQ(s.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(s.status().message().find(path), std::string::npos);
    EXPECT_NE(s.status().message().find("longer than 4096"), std::string::npos);
  }
}

TEST_F(SecretFile, EmptyMissingAndUnreadable) {
  for (const std::string& content : {std::string(), std::string("\n")}) {
    const std::string path = write("empty", content);
    Result<std::string> s = read_secret_file(path);
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(s.status().message().find(path), std::string::npos);
    EXPECT_NE(s.status().message().find("empty"), std::string::npos);
  }
  const std::string missing = (dir_ / "nope").string();
  Result<std::string> s = read_secret_file(missing);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), Errc::kIo);
  EXPECT_NE(s.status().message().find(missing), std::string::npos);
  EXPECT_NE(s.status().message().find("No such file"), std::string::npos);

  // A directory opens but cannot be read.
  s = read_secret_file(dir_.string());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), Errc::kIo);

  EXPECT_EQ(read_secret_file("").status().code(), Errc::kInvalidArgument);
}

}  // namespace
}  // namespace pandora
