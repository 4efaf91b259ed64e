// The directories CRIU writes (checkpoint) or reads (restore) as root, and
// the files husk keeps beside CRIU's images.
#pragma once

#include <string>
#include <vector>

#include "base/fd.h"

namespace husk::ckpt {

// `path` (absolute, or the caller's working directory's) opened as a
// directory without following any symlink on the way, made 0700 (with its
// missing parents) when `create`; refused when another user owns it or may
// write it: CRIU, as root, writes and reads there by name. `flag` names it.
base::Fd open_image_dir(const std::string& path, const std::string& flag, bool create);

// What restore needs beside CRIU's images: the config the container was
// made from, and what its stdin, stdout and stderr were (runc's
// descriptors.json).
struct ImageFiles {
  std::string config_text;
  std::vector<std::string> descriptors;
};
void write_image_files(int dirfd, const ImageFiles& files, const std::string& shown);
// Throws, naming `shown`, for a directory that holds no image of husk's.
ImageFiles read_image_files(int dirfd, const std::string& shown);

}  // namespace husk::ckpt
