# CPACK_PRE_BUILD_SCRIPTS of the DEB generator: Depends from the libraries
# the staged husk-systemd links (dpkg-shlibdeps), without husk-criu's
# (cmake/package.cmake says why). husk itself is static: with
# -DHUSK_SYSTEMD=OFF the package depends on nothing.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
file(GLOB_RECURSE bridge "${CPACK_TEMPORARY_DIRECTORY}/*/libexec/husk/husk-systemd")
if(NOT bridge)
  return()
endif()
find_program(DPKG_SHLIBDEPS dpkg-shlibdeps REQUIRED)
# dpkg-shlibdeps wants a debian/control beside it; an empty one will do.
set(work "${CPACK_TEMPORARY_DIRECTORY}/../shlibdeps")
file(WRITE "${work}/debian/control" "")
execute_process(COMMAND ${DPKG_SHLIBDEPS} -O ${bridge} WORKING_DIRECTORY "${work}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
file(REMOVE_RECURSE "${work}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "^shlibs:Depends=(.+)$")
  message(FATAL_ERROR "dpkg-shlibdeps ${bridge}: ${err}${out}")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${CMAKE_MATCH_1}")
message(STATUS "Depends: ${CPACK_DEBIAN_PACKAGE_DEPENDS}")
