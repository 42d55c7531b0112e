// `codeact image build`.
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "cli_context.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/image_builder.hpp"

namespace codeact::cli {

void add_image_commands(CLI::App& app, ExitCode& exit) {
  auto* img = app.add_subcommand("image", "Build the sandbox image (no registry needed)");
  img->require_subcommand(1);
  auto* build = img->add_subcommand(
      "build", "Build the sandbox image if missing (or again with --force), showing progress");
  auto force = std::make_shared<bool>(false);
  auto method = std::make_shared<std::string>("auto");
  build->add_flag("--force", *force, "Rebuild even if the image for this recipe exists");
  build->add_option("--method", *method, "auto, base-image or debootstrap")
      ->check(CLI::IsMember({"auto", "base-image", "debootstrap"}))
      ->capture_default_str();
  build->callback([=, &exit] {
    auto docker = sandbox::DockerClient::create();
    if (!docker.ok()) {
      exit.value = report(docker.error());
      return;
    }
    if (auto s = (*docker)->ping(); !s.ok()) {
      exit.value = report(s.error());
      return;
    }
    sandbox::ImageBuilderOptions opts;
    opts.method = *method == "debootstrap"  ? sandbox::BuildMethod::kDebootstrap
                  : *method == "base-image" ? sandbox::BuildMethod::kBaseImage
                                            : sandbox::BuildMethod::kAuto;
    opts.progress = [](std::string_view line) { std::cerr << "  " << line << "\n"; };
    sandbox::ImageBuilder builder(*docker, opts);
    std::cerr << fmt::format("[codeact] sandbox image {}\n", builder.image_tag());
    auto r = builder.build(*force);
    if (!r.ok()) {
      exit.value = report(r.error());
      return;
    }
    if (r->built) {
      std::cerr << fmt::format("[codeact] built {} with {} in {:.1f}s ({} MB)\n", r->tag,
                               sandbox::build_method_name(r->method), r->duration.count() / 1000.0,
                               r->size_bytes / (1024 * 1024));
    } else {
      std::cerr << fmt::format("[codeact] {} is already built\n", r->tag);
    }
    std::cout << r->tag << "\n";
    exit.value = kExitOk;
  });
}

}  // namespace codeact::cli
