// Fuzzes sandbox::read_tar, which reads what the Docker engine (and so a sandbox's files)
// sends back: ustar, PAX and GNU long-name headers. What it reads must write back out
// (TarWriter) and read again to the same entries.
#include <cstdio>
#include <cstdlib>

#include "codeact/sandbox/tar_archive.hpp"
#include "fuzz_input.hpp"

using codeact::sandbox::TarEntry;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto entries = codeact::sandbox::read_tar(codeact::fuzz::as_text(data, size));
  if (!entries.ok()) return 0;
  auto archive = codeact::sandbox::write_tar(*entries);
  if (!archive.ok()) return 0;  // e.g. a path with "..": the writer refuses it
  auto again = codeact::sandbox::read_tar(*archive);
  if (!again.ok()) {
    std::fprintf(stderr, "read_tar cannot read what TarWriter wrote: %s\n",
                 again.error().message().c_str());
    std::abort();
  }
  if (again->size() != entries->size()) {
    std::fprintf(stderr, "read %zu entries, wrote them and read %zu back\n", entries->size(),
                 again->size());
    std::abort();
  }
  return 0;
}
