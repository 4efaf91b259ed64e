# `cpack -G DEB` in the build directory: a .deb of what `cmake --install`
# installs (husk, its helpers in libexec/husk, man pages, completions), with
# the README and a copyright file, under /usr. tests/package/test-package
# builds, inspects, installs and removes it.
set(CPACK_PACKAGE_NAME husk)
# `cpack` and `make package` alone make the .deb too.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_VENDOR "the husk authors")
set(HUSK_DEB_MAINTAINER "the husk authors" CACHE STRING "Maintainer field of the .deb (Name <email>)")
set(CPACK_PACKAGE_CONTACT "${HUSK_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OCI container runtime (a drop-in for runc) and a sandbox for untrusted code")
set(CPACK_PACKAGE_DESCRIPTION "husk runs OCI bundles with runc's command line, so containerd, podman and
Docker drive it as they drive runc, rootless included. husk sandbox runs
a command from the host in a throw-away container with no access to the
user's secrets, and husk check reviews a bundle against a policy.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The installed binaries lose their debug info, as with scripts/install.
set(CPACK_STRIP_FILES ON)
# husk is static and needs no library; husk-systemd's libraries are computed
# from the staged binary (cmake/deb_depends.cmake). husk-criu's libcriu is
# part of Debian's criu, which checkpoint/restore needs anyway and which
# few hosts want: husk says so when criu is missing, before it starts husk-criu.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS criu)
# newuidmap/newgidmap: rootless containers with more than one id mapped.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS uidmap)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/deb_depends.cmake)

# No license has been chosen for husk yet: the copyright file says so until
# a LICENSE at the top of the tree gives the text the package carries.
if(EXISTS ${PROJECT_SOURCE_DIR}/LICENSE)
  set(HUSK_COPYRIGHT ${PROJECT_SOURCE_DIR}/LICENSE)
else()
  set(HUSK_COPYRIGHT ${CMAKE_CURRENT_LIST_DIR}/copyright.no-license)
endif()
install(FILES ${HUSK_COPYRIGHT} DESTINATION share/doc/husk RENAME copyright)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/husk)
include(CPack)
