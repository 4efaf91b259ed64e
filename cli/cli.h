#pragma once

namespace husk::rt {

// Parses runc-compatible argv and runs the command; returns the exit status.
// Errors are printed as one line on stderr and logged to --log.
int cli_main(int argc, char** argv);

}  // namespace husk::rt
