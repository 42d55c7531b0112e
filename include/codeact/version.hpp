// Which codeact this is: the release (CMakeLists.txt's project VERSION, CHANGELOG.md) and the
// git commit it was built from. Library: codeact_version.
#pragma once

namespace codeact {

// The project's version, "MAJOR.MINOR.PATCH".
const char* version();
// The git commit of the source tree built: 12 hex digits, with "-dirty" when tracked files had
// changes; "unknown" when it was not built from a git checkout. Written at every build.
const char* build_revision();

}  // namespace codeact
