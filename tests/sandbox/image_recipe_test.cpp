// The sandbox image's identity: which recipe content gives which tag, and what goes into the
// build context. No Docker needed.
#include <gtest/gtest.h>

#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/tar_archive.hpp"

namespace codeact::sandbox {
namespace {

ImageRecipe sample_recipe() {
  ImageRecipe r;
  r.files["Dockerfile"] = "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n";
  r.files["entrypoint.sh"] = "#!/bin/sh\nexec \"$@\"\n";
  r.files["bootstrap.sh"] = "#!/bin/bash\ndebootstrap ...\n";
  r.files["packages.txt"] = "# comment\npython3\n  python3-numpy  # inline\n\nbash\n";
  r.files["codeact_kernel/__main__.py"] = "print('kernel v1')\n";
  return r;
}

TEST(ImageRecipe, EmbeddedRecipeHasEveryFileTheBuildNeeds) {
  const ImageRecipe& r = ImageRecipe::embedded();
  for (const char* name : {"Dockerfile", "entrypoint.sh", "bootstrap.sh", "packages.txt",
                           "codeact_kernel/__main__.py", "codeact_kernel/kernel.py"}) {
    ASSERT_TRUE(r.files.count(name)) << name;
    EXPECT_FALSE(r.files.at(name).empty()) << name;
  }
  auto packages = r.packages();
  for (const char* p : {"python3", "python3-numpy", "python3-pandas", "python3-matplotlib",
                        "python3-cloudpickle", "python3-dill", "python3-pip", "ca-certificates"}) {
    EXPECT_NE(std::find(packages.begin(), packages.end(), p), packages.end()) << p;
  }
}

TEST(ImageRecipe, KernelChangeGivesANewTagButKeepsTheRootFileSystem) {
  ImageRecipe v1 = sample_recipe();
  ImageRecipe v2 = v1;
  v2.files["codeact_kernel/__main__.py"] = "print('kernel v2')\n";
  EXPECT_NE(v1.content_hash(), v2.content_hash());
  EXPECT_EQ(v1.rootfs_hash("bookworm"), v2.rootfs_hash("bookworm"));

  ImageBuilder b1(nullptr, {}, v1);
  ImageBuilder b2(nullptr, {}, v2);
  EXPECT_NE(b1.image_tag(), b2.image_tag());
  EXPECT_EQ(b1.image_tag().rfind("codeact-sandbox:", 0), 0u);
  EXPECT_EQ(b1.short_hash().size(), 12u);
  EXPECT_EQ(b1.short_hash(), v1.content_hash().substr(0, 12));
  // Same content, same tag: the hash is a function of the files only.
  EXPECT_EQ(ImageBuilder(nullptr, {}, sample_recipe()).image_tag(), b1.image_tag());
}

TEST(ImageRecipe, PackageSetChangesTheRootFileSystemHashButNotComments) {
  ImageRecipe base = sample_recipe();
  ImageRecipe reworded = base;
  reworded.files["packages.txt"] = "bash\npython3-numpy\npython3\n# reordered, new comment\n";
  EXPECT_EQ(base.rootfs_hash("bookworm"), reworded.rootfs_hash("bookworm"));
  ImageRecipe more = base;
  more.files["packages.txt"] += "python3-scipy\n";
  EXPECT_NE(base.rootfs_hash("bookworm"), more.rootfs_hash("bookworm"));
  EXPECT_NE(base.rootfs_hash("bookworm"), base.rootfs_hash("trixie"));
  EXPECT_EQ(base.packages(), (std::vector<std::string>{"python3", "python3-numpy", "bash"}));
}

TEST(ImageRecipe, RenamingAFileChangesTheHash) {
  ImageRecipe a;
  a.files["x"] = "yz";
  ImageRecipe b;
  b.files["xy"] = "z";
  EXPECT_NE(a.content_hash(), b.content_hash());
}

TEST(ImageRecipe, BuildContextHoldsDockerfileEntrypointKernelAndPackageList) {
  ImageBuilder builder(nullptr, {}, sample_recipe());
  auto context = builder.build_context("python3 bash");
  ASSERT_TRUE(context.ok()) << context.error().to_string();
  auto entries = read_tar(*context);
  ASSERT_TRUE(entries.ok());
  std::map<std::string, TarEntry> by_name;
  for (auto& e : *entries) by_name[e.path] = e;
  ASSERT_TRUE(by_name.count("Dockerfile"));
  ASSERT_TRUE(by_name.count("codeact_kernel/__main__.py"));
  EXPECT_EQ(by_name["codeact_kernel/__main__.py"].data, "print('kernel v1')\n");
  ASSERT_TRUE(by_name.count("entrypoint.sh"));
  EXPECT_EQ(by_name["entrypoint.sh"].mode, 0755u);
  EXPECT_EQ(by_name["Dockerfile"].mode, 0644u);
  ASSERT_TRUE(by_name.count("build/apt-packages"));
  EXPECT_EQ(by_name["build/apt-packages"].data, "python3 bash");
  EXPECT_TRUE(by_name.count("build/ca.crt"));
}

}  // namespace
}  // namespace codeact::sandbox
