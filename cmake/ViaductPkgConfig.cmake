# SPDX-License-Identifier: MIT
#
# Runs at install time (install(SCRIPT)), after ViaductInstall.cmake has set
# the VIADUCT_PC_* variables: writes viaduct.pc for the prefix being
# installed to.  DESTDIR is added by file(INSTALL), never to the contents.
set(prefix "${CMAKE_INSTALL_PREFIX}")
foreach(kind LIBDIR INCLUDEDIR MPI_INCLUDEDIR)
	if(IS_ABSOLUTE "${VIADUCT_PC_${kind}}")
		set(_dir "${VIADUCT_PC_${kind}}")
	else()
		set(_dir "\${prefix}/${VIADUCT_PC_${kind}}")
	endif()
	string(TOLOWER "${kind}" _var)
	set(${_var} "${_dir}")
endforeach()

configure_file("${VIADUCT_PC_IN}" "${VIADUCT_PC_OUT}" @ONLY)
if(IS_ABSOLUTE "${VIADUCT_PC_LIBDIR}")
	set(_pcdir "${VIADUCT_PC_LIBDIR}/pkgconfig")
else()
	set(_pcdir "${CMAKE_INSTALL_PREFIX}/${VIADUCT_PC_LIBDIR}/pkgconfig")
endif()
file(INSTALL "${VIADUCT_PC_OUT}" DESTINATION "${_pcdir}")
