#include "catch_run.h"

#include "skip.h"

int main(int argc, char** argv) { return husk_test::finish(husk_test::run_catch(argc, argv)); }
