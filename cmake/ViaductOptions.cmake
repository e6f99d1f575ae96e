# SPDX-License-Identifier: MIT
#
# Language level, warnings and sanitizers, applied to every target of the
# project (library, tools, tests, examples, benchmarks) so that a sanitizer
# build instruments all of them alike.
#
# _GNU_SOURCE comes from here, for every file (Linux-only code: mlock2,
# process_vm_readv, pipe2, strerrordesc_np, MAP_ANONYMOUS under -std=c11).
# Sources must not #define it themselves (a redefinition is an error under
# -Werror), or only under #ifndef _GNU_SOURCE.

set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
add_compile_definitions(_GNU_SOURCE)

# Default: optimised with debug info (-O2 -g), what `make build` uses.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
	set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

option(VIADUCT_WERROR "Treat warnings as errors" ON)
set(VIADUCT_SANITIZE "" CACHE STRING
	"Sanitizer build: empty, 'address' (ASan+UBSan) or 'thread' (TSan)")
set_property(CACHE VIADUCT_SANITIZE PROPERTY STRINGS "" address thread)

add_compile_options(-Wall -Wextra -Wshadow
	$<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes>
	$<$<COMPILE_LANGUAGE:C>:-Wmissing-prototypes>
	# mpif.h declares every constant; a program uses a few
	$<$<COMPILE_LANGUAGE:Fortran>:-Wno-unused-parameter>)
if(VIADUCT_WERROR)
	# C only: the Fortran sources are generated bindings and test programs
	# written as users write them (mpif.h, mismatched buffer types).
	add_compile_options($<$<COMPILE_LANGUAGE:C>:-Werror>)
endif()

if(VIADUCT_SANITIZE STREQUAL "address")
	set(_vd_san -fsanitize=address,undefined -fno-omit-frame-pointer
		-fno-sanitize-recover=all)
elseif(VIADUCT_SANITIZE STREQUAL "thread")
	set(_vd_san -fsanitize=thread)
	# gcc warns that TSan does not model atomic_thread_fence.  viaduct's
	# fences are the store->load (Dekker) half of waiter/waker and
	# revoke/RDMA handshakes; the data they guard is itself atomic, so no
	# happens-before edge TSan needs comes from a fence.
	add_compile_options(-Wno-tsan)
elseif(NOT VIADUCT_SANITIZE STREQUAL "")
	message(FATAL_ERROR "VIADUCT_SANITIZE must be empty, address or thread")
endif()
if(_vd_san)
	add_compile_options(${_vd_san})
	add_link_options(${_vd_san})
endif()

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
