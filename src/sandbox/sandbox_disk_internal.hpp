// Sandbox disks: a size-limited ext4 file system per sandbox, in an image file on the host,
// attached to a loop device and handed to Docker as the `device` of the sandbox's local volume
// (Docker's local driver mounts block devices only, so the loop device is codeact's to attach).
//
//   <data_dir>/sandboxes/<id>/disk.ext4   the image (sparse: the host pays for what is written)
//   /dev/loopN                             attached to it, kept attached while the sandbox exists
//   volume workflow-<id>                   driver local, type ext4, device /dev/loopN
//
// Loop numbers are not stable across host reboots, and a stale /dev/loopN could by then belong to
// ANOTHER sandbox's image: before every container start the manager re-checks that the volume's
// device is attached to this sandbox's image (attached_image) and re-attaches / recreates the
// volume otherwise. Attaching needs CAP_SYS_ADMIN (root).
//
// Not thread-safe per image; the manager calls these under its per-sandbox lock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codeact/core/result.hpp"

namespace codeact::sandbox::disk {

// Creates a sparse image of `bytes` with an ext4 file system whose root belongs to uid:gid
// (mkfs.ext4 from e2fsprogs; no reserved blocks, so the sandbox can use all of it). Refuses to
// overwrite an existing file (AlreadyExists).
core::Status create_image(const std::string& path, int64_t bytes, int uid, int gid);

// The size of an existing image in bytes.
core::Result<int64_t> image_size(const std::string& path);

// The loop device ("/dev/loop3") `image` is attached to, or nullopt.
core::Result<std::optional<std::string>> find_loop_device(const std::string& image);

// The image file /dev/loopN is attached to, or nullopt when it is free.
std::optional<std::string> attached_image(const std::string& device);

// Attaches `image` to a free loop device (or returns the one it is already attached to).
// PermissionDenied without CAP_SYS_ADMIN, saying so.
core::Result<std::string> attach(const std::string& image);

// Detaches `device`; fine when it is already free.
core::Status detach(const std::string& device);

}  // namespace codeact::sandbox::disk
