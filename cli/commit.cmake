# Writes OUT: the commit SRC is checked out at (git rev-parse --short HEAD,
# "-dirty" with uncommitted changes to tracked files; "unknown" outside git).
# Run at every build; OUT is rewritten only when the commit changed, so only
# cli/version.cpp recompiles then.
set(commit unknown)
find_package(Git QUIET)
if(GIT_FOUND)
  # Only SRC's own repository: a source tarball unpacked inside another
  # checkout must not name that one's commit.
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC}" rev-parse --show-toplevel
                  OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC}" rev-parse --short HEAD
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  file(REAL_PATH "${SRC}" src_real)
  if(rc EQUAL 0 AND top STREQUAL src_real AND NOT head STREQUAL "")
    set(commit "${head}")
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0 AND NOT changes STREQUAL "")
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
file(WRITE "${OUT}.tmp" "#define HUSK_COMMIT \"${commit}\"\n")
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
