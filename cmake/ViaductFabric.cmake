# SPDX-License-Identifier: MIT
#
# What src/prov/ofi/ofi_lib.c needs to open libfabric at run time
# (dlopen), found here against the libfabric this build uses:
#   VIADUCT_FI_DEFS  compile definitions: VD_FI_SONAME ("libfabric.so.1"),
#                    VD_FI_LIBDIR (where it was found) and, per function
#                    the provider calls, the symbol version a program
#                    linked against it gets (VD_FI_VER_getinfo
#                    "FABRIC_1.3", ...), so that dlvsym returns the
#                    function of the fi_info layout these headers declare.
# Why not link it: libfabric's own dependencies (Debian's libpsm2 and
# libinfinipath) calibrate a clock in their constructors, 0.2 s of sleep
# at every process start, a cost a job that never leaves its host need
# not pay.

set(VIADUCT_FI_FUNCS getinfo freeinfo dupinfo fabric strerror)

function(viaduct_fabric_probe)
	set(dir "${CMAKE_BINARY_DIR}/CMakeFiles/vd_fi_probe")
	set(src "${dir}/probe.c")
	file(WRITE "${src}" "#include <rdma/fabric.h>\n#include <rdma/fi_errno.h>\n"
		"int main(void) { struct fi_info *i = fi_dupinfo(0), *o = 0;\n"
		"  struct fid_fabric *f = 0;\n"
		"  int r = fi_getinfo(FI_VERSION(1, 17), 0, 0, 0, i, &o);\n"
		"  if (!r) r = fi_fabric(o->fabric_attr, &f, 0);\n"
		"  fi_freeinfo(i); fi_freeinfo(o); return fi_strerror(r)[0]; }\n")
	try_compile(_vd_fi_linked "${dir}/build" SOURCES "${src}"
		LINK_LIBRARIES PkgConfig::LIBFABRIC
		COPY_FILE "${dir}/probe" NO_CACHE)
	if(NOT _vd_fi_linked)
		message(FATAL_ERROR "libfabric: a program calling it does not link")
	endif()
	if(CMAKE_OBJDUMP)
		set(VIADUCT_OBJDUMP "${CMAKE_OBJDUMP}")
	else()
		find_program(VIADUCT_OBJDUMP objdump REQUIRED)
	endif()
	execute_process(COMMAND "${VIADUCT_OBJDUMP}" -T "${dir}/probe"
		OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
	if(NOT rc EQUAL 0)
		message(FATAL_ERROR "libfabric: ${VIADUCT_OBJDUMP} -T cannot read the probe program")
	endif()
	set(defs "")
	foreach(f IN LISTS VIADUCT_FI_FUNCS)
		# "...  *UND*  0000000000000000 (FABRIC_1.3) fi_getinfo"
		if(dyn MATCHES "\\((FABRIC_[0-9.]+)\\)[ \t]+fi_${f}\n")
			list(APPEND defs "VD_FI_VER_${f}=\"${CMAKE_MATCH_1}\"")
		elseif(dyn MATCHES "FABRIC_")
			# A versioned libfabric whose version of this one we could not
			# read: plain dlsym would take the newest, maybe another layout.
			message(FATAL_ERROR "libfabric: no symbol version of fi_${f} in "
				"${VIADUCT_OBJDUMP} -T's output")
		endif()
	endforeach()

	# The library's soname, and the folder it was found in (for a
	# libfabric outside the loader's search path).
	set(lib "")
	foreach(l IN LISTS LIBFABRIC_LINK_LIBRARIES)
		if(l MATCHES "libfabric[.]so")
			set(lib "${l}")
		endif()
	endforeach()
	set(soname "libfabric.so.1")
	if(lib)
		execute_process(COMMAND "${VIADUCT_OBJDUMP}" -p "${lib}"
			OUTPUT_VARIABLE hdr)
		if(hdr MATCHES "SONAME[ \t]+([^ \t\n]+)")
			set(soname "${CMAKE_MATCH_1}")
		endif()
		get_filename_component(libdir "${lib}" DIRECTORY)
		# Not in a cross build: the sysroot's folder means nothing on the
		# target.
		if(NOT CMAKE_CROSSCOMPILING)
			list(APPEND defs "VD_FI_LIBDIR=\"${libdir}\"")
		endif()
	endif()
	list(APPEND defs "VD_FI_SONAME=\"${soname}\"")
	set(VIADUCT_FI_DEFS "${defs}" PARENT_SCOPE)
	message(STATUS "libfabric, opened at run time: ${soname} ${defs}")
endfunction()

if(LIBFABRIC_FOUND)
	viaduct_fabric_probe()
endif()
