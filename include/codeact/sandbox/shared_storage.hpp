// Shared storage: sandbox state every host can reach (docs/deploy.md), so a sandbox started on
// one host can be started again on another with its state. `CODEACT_SHARED_DIR` names a directory
// that every host mounts at the same path (NFS, CephFS, EFS, mounted by the operator); each
// sandbox gets its own subdirectory `<dir>/<id>`, bind-mounted (through a named volume of
// Docker's local driver, `workflow-<id>` as on one host) at /persistent-storage. A sandbox sees
// its own subdirectory only, never the others'.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "codeact/core/config.hpp"
#include "codeact/core/result.hpp"

namespace codeact::sandbox {

// CODEACT_SHARED_DIR through `env`, without trailing slashes: nullopt when unset or empty;
// InvalidArgument when it is not an absolute path.
core::Result<std::optional<std::string>> shared_dir_from(const core::EnvLookup& env);

// `<root>/<id>`: where sandbox `id` keeps its state under the shared directory.
std::string shared_sandbox_dir(const std::string& root, const std::string& id);

// The local driver's options that bind `<root>/<id>` as the sandbox's volume (no set-uid files,
// no device nodes).
std::map<std::string, std::string> shared_volume_options(const std::string& root,
                                                         const std::string& id);

// Makes `<root>/<id>` (mode 0700, owned by the sandbox user `uid`:`gid`) when missing.
// FailedPrecondition when `root` is not an existing directory (the mount is missing on this
// host) or the subdirectory cannot be made or given to the sandbox user, naming the path.
core::Status prepare_shared_sandbox_dir(const std::string& root, const std::string& id, int uid,
                                        int gid);

// Removes `<root>/<id>` and everything in it (links are removed, never followed). True when it
// existed; Internal naming the path when it could not be removed.
core::Result<bool> remove_shared_sandbox_dir(const std::string& root, const std::string& id);

// Ownership epochs (fencing): `<root>/.owners/<id>/<n>` records placement n of the sandbox (its
// content: the host id), outside the sandbox's own directory (which the sandbox can change) and
// mounted read-only into its container. A container started for placement n (CODEACT_EPOCH=n)
// runs the sandbox while no greater n exists; its kernel checks at start-up, before every commit
// and every second, and exits with kExitFenced otherwise (kernel/codeact_kernel/ownership.py), so
// a host that was cut off and comes back never overwrites the new owner's state. Removing a
// sandbox keeps its placements, so a container of an earlier one stays fenced.
struct Placement {
  int64_t epoch = 0;  // 0 = none recorded
  std::string host;
};
inline constexpr int64_t kExitFenced = 76;

// `<root>/.owners/<id>`: the placements of sandbox `id`.
std::string shared_owner_dir(const std::string& root, const std::string& id);

// The newest placement recorded for sandbox `id` ({0, ""} when none or unreadable).
Placement newest_placement(const std::string& root, const std::string& id);

// Records the next placement (newest + 1) of sandbox `id` on `host`: created exclusively, so two
// hosts placing the sandbox at once get different epochs (the greater one owns it). Internal
// naming the path when it cannot be written.
core::Result<Placement> take_placement(const std::string& root, const std::string& id,
                                       const std::string& host);

}  // namespace codeact::sandbox
