# SPDX-License-Identifier: MIT
#
# What `cmake --install` (and `make install PREFIX=...`) puts in place:
#   bin/vdinfo, vdrun, vdcc, vdcxx  (tools/CMakeLists.txt)
#   include/vipl.h, include/viaduct/*.h
#   include/viaduct-mpi/mpi.h       (src/mpi/CMakeLists.txt)
#   lib/libviaduct.so*, libviaduct.a, libvipl.so, libvipl.a
#   lib/libviaduct_mpi.so*, libviaduct_mpi.a
#   lib/pkgconfig/viaduct.pc, viaduct-mpi.pc
#   lib/cmake/viaduct/              find_package(viaduct) -> viaduct::viaduct,
#                                   viaduct::viaduct_mpi
#   share/man/man1, man3            (man/)
#
# Everything is relocatable: the prefix may be chosen at install time
# (cmake --install --prefix), so nothing may bake in the configure-time
# CMAKE_INSTALL_PREFIX.
include(CMakePackageConfigHelpers)

set(VIADUCT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/viaduct")

install(TARGETS viaduct viaduct_static EXPORT viaduct-targets
	LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
	ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
	RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/"
	DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
	FILES_MATCHING PATTERN "*.h" PATTERN "mpi.h" EXCLUDE)

# CMake package: viaduct::viaduct (shared), viaduct::viaduct_static.
install(EXPORT viaduct-targets NAMESPACE viaduct::
	DESTINATION ${VIADUCT_CMAKE_DIR})
configure_package_config_file(
	"${CMAKE_CURRENT_LIST_DIR}/viaduct-config.cmake.in"
	"${PROJECT_BINARY_DIR}/viaduct-config.cmake"
	INSTALL_DESTINATION ${VIADUCT_CMAKE_DIR})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(
	"${PROJECT_BINARY_DIR}/viaduct-config-version.cmake"
	COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/viaduct-config.cmake"
	"${PROJECT_BINARY_DIR}/viaduct-config-version.cmake"
	DESTINATION ${VIADUCT_CMAKE_DIR})

# pkg-config: written at install time, when the real prefix is known.
install(CODE "
	set(VIADUCT_PC_IN \"${CMAKE_CURRENT_LIST_DIR}/viaduct.pc.in\")
	set(VIADUCT_PC_OUT \"${PROJECT_BINARY_DIR}/viaduct.pc\")
	set(VIADUCT_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
	set(VIADUCT_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
	set(VIADUCT_PC_MPI_INCLUDEDIR \"${VIADUCT_MPI_INCLUDEDIR}\")
	set(VIADUCT_PC_VERSION \"${PROJECT_VERSION}\")
	set(VIADUCT_PC_DESCRIPTION \"${PROJECT_DESCRIPTION}\")
")
install(SCRIPT "${CMAKE_CURRENT_LIST_DIR}/ViaductPkgConfig.cmake")
if(TARGET viaduct_mpi)
	install(CODE "
		set(VIADUCT_PC_IN \"${CMAKE_CURRENT_LIST_DIR}/viaduct-mpi.pc.in\")
		set(VIADUCT_PC_OUT \"${PROJECT_BINARY_DIR}/viaduct-mpi.pc\")
	")
	install(SCRIPT "${CMAKE_CURRENT_LIST_DIR}/ViaductPkgConfig.cmake")
endif()
