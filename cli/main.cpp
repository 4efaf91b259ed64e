#include "cli/cli.h"

int main(int argc, char** argv) { return husk::rt::cli_main(argc, argv); }
