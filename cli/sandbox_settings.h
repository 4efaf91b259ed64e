// `husk sandbox`'s settings files merged into its flags (settings.h).
#pragma once

#include <boost/program_options.hpp>

namespace husk::rt {

// Adds to `vm` (the command line's flags of `husk sandbox`, described by
// `d`) what the settings files give: the caller's default file
// ($XDG_CONFIG_HOME/husk/sandbox.yaml or .json; as root, root's own, never
// the user's) unless --no-user-settings, each --settings FILE, then
// each --project-settings FILE, which may only narrow. A scalar: the
// command line, else the last --settings file, else the default file; a
// list: all of them. With --print-settings, prints the flags in force and
// where each came from and returns true.
bool apply_sandbox_settings(boost::program_options::variables_map& vm,
                            const boost::program_options::options_description& d);

}  // namespace husk::rt
