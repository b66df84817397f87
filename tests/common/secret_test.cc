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
  Result<std::string> s = read_secret_file(write("a", "hunter2\n"));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(*s, "hunter2");
  s = read_secret_file(write("b", "hunter2"));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, "hunter2");
  s = read_secret_file(write("c", "two\n\n"));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, "two\n");
  s = read_secret_file(write("d", std::string(" sp\0ace ", 8)));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, std::string(" sp\0ace ", 8));
}

TEST_F(SecretFile, ReportsWorldReadable) {
  bool world = true;
  ASSERT_TRUE(read_secret_file(write("private", "s", 0600), &world).is_ok());
  EXPECT_FALSE(world);
  ASSERT_TRUE(read_secret_file(write("group", "s", 0640), &world).is_ok());
  EXPECT_FALSE(world);
  ASSERT_TRUE(read_secret_file(write("public", "s", 0644), &world).is_ok());
  EXPECT_TRUE(world);
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
