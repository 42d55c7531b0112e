// The tar writer/reader against itself and against GNU tar, the program Docker users compare with.
#include "codeact/sandbox/tar_archive.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "codeact/core/subprocess.hpp"

namespace codeact::sandbox {
namespace {

std::string binary_blob(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>((i * 131 + 7) % 256);
  return s;
}

const TarEntry* find(const std::vector<TarEntry>& entries, const std::string& path) {
  for (const auto& e : entries) {
    if (e.path == path) return &e;
  }
  return nullptr;
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string p = ::testing::TempDir() + "/tar_test_XXXXXX";
    path = ::mkdtemp(p.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(TarArchive, RoundTripKeepsContentModesOwnersAndTypes) {
  const std::string long_dir(120, 'd');
  const std::string very_long_name = std::string(300, 'n') + ".bin";
  const std::string blob = binary_blob(70000) + std::string(3, '\0');
  TarWriter w;
  ASSERT_TRUE(w.add_directory("work", 0750, 1000, 1000).ok());
  ASSERT_TRUE(w.add_file("work/data.bin", blob, 0600, 1000, 1000).ok());
  ASSERT_TRUE(w.add_file("work/empty.txt", "", 0644).ok());
  ASSERT_TRUE(w.add_file(long_dir + "/split.txt", "prefix+name").ok());
  ASSERT_TRUE(w.add_file(very_long_name, "pax path").ok());
  ASSERT_TRUE(w.add_symlink("work/link", std::string(150, 't')).ok());
  ASSERT_TRUE(w.add_file("run.sh", "#!/bin/sh\n", 0755).ok());
  TarEntry big_uid;
  big_uid.path = "big-uid";
  big_uid.data = "x";
  big_uid.uid = 3000000;  // does not fit the 7 octal digits of ustar
  ASSERT_TRUE(w.add(big_uid).ok());
  std::string archive = w.finish();
  EXPECT_EQ(archive.size() % 512, 0u);

  auto entries = read_tar(archive);
  ASSERT_TRUE(entries.ok()) << entries.error().to_string();
  ASSERT_EQ(entries->size(), 8u);
  const TarEntry* dir = find(*entries, "work");
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(dir->type, TarEntryType::kDirectory);
  EXPECT_EQ(dir->mode, 0750u);
  EXPECT_EQ(dir->uid, 1000u);
  const TarEntry* data = find(*entries, "work/data.bin");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->data, blob);
  EXPECT_EQ(data->mode, 0600u);
  EXPECT_EQ(data->gid, 1000u);
  ASSERT_NE(find(*entries, "work/empty.txt"), nullptr);
  EXPECT_EQ(find(*entries, "work/empty.txt")->data, "");
  ASSERT_NE(find(*entries, long_dir + "/split.txt"), nullptr);
  ASSERT_NE(find(*entries, very_long_name), nullptr);
  EXPECT_EQ(find(*entries, very_long_name)->data, "pax path");
  const TarEntry* link = find(*entries, "work/link");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->type, TarEntryType::kSymlink);
  EXPECT_EQ(link->link_target, std::string(150, 't'));
  EXPECT_EQ(find(*entries, "run.sh")->mode, 0755u);
  EXPECT_EQ(find(*entries, "big-uid")->uid, 3000000u);
}

TEST(TarArchive, RejectsPathsThatEscapeTheRoot) {
  TarWriter w;
  EXPECT_EQ(w.add_file("/etc/passwd", "x").error().code(), core::Code::kInvalidArgument);
  EXPECT_EQ(w.add_file("a/../../b", "x").error().code(), core::Code::kInvalidArgument);
  EXPECT_EQ(w.add_file("", "x").error().code(), core::Code::kInvalidArgument);
  EXPECT_TRUE(w.add_file("a/..b", "x").ok());  // a name, not a parent reference
}

TEST(TarArchive, CorruptOrTruncatedArchivesAreDataLoss) {
  TarWriter w;
  ASSERT_TRUE(w.add_file("f.txt", std::string(2000, 'x')).ok());
  std::string archive = w.finish();
  auto truncated = read_tar(std::string_view(archive).substr(0, 1024));
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.error().code(), core::Code::kDataLoss);
  std::string corrupt = archive;
  corrupt[10] ^= 0x5a;  // inside the name: checksum no longer matches
  auto bad = read_tar(corrupt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), core::Code::kDataLoss);
  auto empty = read_tar("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(TarArchive, GnuTarExtractsWhatWeWrite) {
  TempDir dir;
  const std::string long_name = "deep/" + std::string(200, 'x') + "/file.txt";
  const std::string blob = binary_blob(5000);
  TarWriter w;
  ASSERT_TRUE(w.add_directory("deep").ok());
  ASSERT_TRUE(w.add_file(long_name, blob, 0640).ok());
  ASSERT_TRUE(w.add_symlink("deep/link", "../target").ok());
  std::string archive = w.finish();
  std::ofstream(dir.path + "/a.tar", std::ios::binary) << archive;
  auto r = core::run_process({"tar", "-xf", dir.path + "/a.tar", "-C", dir.path});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->exit_code, 0) << r->stderr_text;
  std::ifstream in(dir.path + "/" + long_name, std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, blob);
  EXPECT_EQ(std::filesystem::read_symlink(dir.path + "/deep/link").string(), "../target");
  auto perms = std::filesystem::status(dir.path + "/" + long_name).permissions();
  EXPECT_EQ(static_cast<unsigned>(perms) & 0777u, 0640u);
}

TEST(TarArchive, ReadsGnuAndPosixArchivesMadeByGnuTar) {
  TempDir dir;
  const std::string long_name = std::string(180, 'g') + ".txt";
  std::filesystem::create_directories(dir.path + "/src/sub");
  std::ofstream(dir.path + "/src/sub/" + long_name, std::ios::binary) << binary_blob(1234);
  std::filesystem::create_symlink(long_name, dir.path + "/src/sub/" + std::string(150, 'l'));
  for (const char* format : {"gnu", "posix", "ustar"}) {
    SCOPED_TRACE(format);
    std::string out = dir.path + "/" + format + ".tar";
    auto r = core::run_process(
        {"tar", std::string("--format=") + format, "-cf", out, "-C", dir.path + "/src", "."});
    ASSERT_TRUE(r.ok());
    if (std::string(format) == "ustar") {
      // ustar cannot hold a 150-character symlink name: GNU tar says so and skips it.
      EXPECT_NE(r->exit_code, 0);
      continue;
    }
    ASSERT_EQ(r->exit_code, 0) << r->stderr_text;
    std::ifstream in(out, std::ios::binary);
    std::string archive((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto entries = read_tar(archive);
    ASSERT_TRUE(entries.ok()) << entries.error().to_string();
    ASSERT_NE(find(*entries, "."), nullptr);
    EXPECT_EQ(find(*entries, "sub")->type, TarEntryType::kDirectory);
    const TarEntry* f = find(*entries, "sub/" + long_name);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->data, binary_blob(1234));
    const TarEntry* l = find(*entries, "sub/" + std::string(150, 'l'));
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->type, TarEntryType::kSymlink);
    EXPECT_EQ(l->link_target, long_name);
  }
}

}  // namespace
}  // namespace codeact::sandbox
