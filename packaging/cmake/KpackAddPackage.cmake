# KpackAddPackage.cmake - package GPU kernels with kpack from a CMake build.
#
# Brought in by find_package(kpack) (kpackConfig.cmake) or by
# add_subdirectory(<kpack>/packaging/cmake) / FetchContent (CMakeLists.txt
# there), which also define the imported executable kpack::kpack.  Needs
# CMake 3.20 (DEPFILE for the Makefile generators as well as Ninja), and the
# C and ASM languages enabled where it is called: project(<engine> C CXX ASM).
#
#   kpack_add_package(<target> <package.yaml>
#     [HEADER <name.h>]          generated header's file name (default <target>.h)
#     [ARCHS <arch>...]          override the package's archs (kpack --archs)
#     [INCLUDE_DIRS <dir>...]    include roots of header-only libraries (kpack -I)
#     [PYTHON_PATH <dir>...]     where Triton kernels' modules are (--python-path)
#     [COMPRESS none|speed|balance|size]   fatbin compression (--compress-mode)
#     [CACHE_DIR <dir>]          unit cache, shareable (default ${KPACK_CACHE_DIR},
#                                else inside the work directory)
#     [LAUNCHER ccache|sccache|<path>]     nvcc launcher (default ${KPACK_NVCC_LAUNCHER})
#     [JOBS <n>]                 units compiled at once (default ${KPACK_JOBS};
#                                0: cores, within memory)
#     [JOB_MEMORY <MiB>]         memory reserved per unit job when JOBS is 0
#     [BATCH <n>]                CUDA specializations per nvcc run (--batch)
#     [PYTHON <path>]            Python with Triton (default ${KPACK_PYTHON}, else
#                                python3)
#     [ROOT <dir>]               project root: manifests and sources lie inside
#                                (default ${PROJECT_SOURCE_DIR})
#     [ALLOW_DEBUG_KERNELS]      accept debug kernels no manifest allows (the
#                                default for CMAKE_BUILD_TYPE=Debug only)
#     [ALLOW_STALE_TUNING]       --allow-stale-tuning
#     [TUNER <name>]             also build the package's tuning harness, the
#                                executable <name> (docs/tuning.md): the tables
#                                `kpack build --tuner` writes, kpack's
#                                kpack_tune_main.c and the package's library;
#                                `kpack tune <package.yaml> --tuner <its path>`
#                                runs it on a GPU machine
#     [EXTRA_ARGS <arg>...])     anything else for `kpack build`, as given
#
# Relative paths: the package file, INCLUDE_DIRS, PYTHON_PATH and ROOT are
# relative to the current source directory, CACHE_DIR to the current binary
# directory.
#
# <target> is a STATIC library (alias kpack::<target>) holding the typed
# launchers, the embedded fatbins and a copy of kpack's runtime, so several
# packages (each with its own `prefix`) link into one program, as Meson's
# do.  Its PUBLIC include directories hold the generated header and kpack.h;
# it links Threads and dl, never libcuda (the runtime dlopens the driver).
# Target properties: KPACK_HEADER, KPACK_INVENTORY (the JSON inventory),
# KPACK_WORK_DIR (units, fatbins and kpack's own Ninja files), KPACK_MANIFEST.
#
# `kpack build` runs as a custom command with kpack's depfile: Ninja and
# Makefile builds rerun it exactly when the package file, a kernel manifest,
# a source or a header a unit read changes, and kpack's own Ninja in the
# work directory then rebuilds only the units that changed.  Its status line
# and its errors (`file:line:col: error: ...`) reach the build's output as
# kpack printed them (USES_TERMINAL).
#
# Cache variables (the build owner's choices, for every package):
#   KPACK_CUDA_ROOT       the CUDA Toolkit (nvcc, fatbinary; cuda.h for the runtime)
#   KPACK_CACHE_DIR, KPACK_NVCC_LAUNCHER, KPACK_JOBS, KPACK_PYTHON: defaults above
#   KPACK_NINJA           the Ninja that runs kpack's units (not found: threads)

include_guard(GLOBAL)

# Functions record the policies in effect where they are defined: NEW
# CMP0116 has Ninja read kpack's depfile (absolute paths) relative to the
# top of the build, whatever the engine's cmake_minimum_required says.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20...3.28)

set(KPACK_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA Toolkit root for kpack: nvcc and fatbinary at build time, cuda.h for the runtime")
set(KPACK_CACHE_DIR "" CACHE PATH "kpack unit cache shared between build directories (empty: inside each package's work directory)")
set(KPACK_NVCC_LAUNCHER "" CACHE STRING "Run nvcc through this launcher: ccache, sccache, or a path (empty: none)")
set(KPACK_JOBS "0" CACHE STRING "Units kpack compiles at once (0: cores, within memory)")
set(KPACK_PYTHON "" CACHE FILEPATH "Python with Triton, for Triton kernels (empty: python3)")
find_program(KPACK_NINJA NAMES ninja ninja-build DOC "Ninja for kpack's units (not found: kpack runs them on threads)")

# _kpack_import(EXECUTABLE <path> TRITON_HELPER <path> RUNTIME_DIR <dir>
#               TUNE_DIR <dir> VERSION <x.y.z> [BUILD_TARGET <target>] [GLOBAL])
# Defines the imported executable kpack::kpack; kpack_add_package reads the
# helper, the runtime and the target that builds kpack (if any) from its
# properties, so it needs no variables from the scope that found kpack.
# GLOBAL for add_subdirectory, whose imported targets would otherwise stay
# in kpack's own directory.
function(_kpack_import)
  cmake_parse_arguments(PARSE_ARGV 0 arg "GLOBAL" "EXECUTABLE;TRITON_HELPER;RUNTIME_DIR;TUNE_DIR;VERSION;BUILD_TARGET" "")
  if(TARGET kpack::kpack)
    return()
  endif()
  if(arg_GLOBAL)
    add_executable(kpack::kpack IMPORTED GLOBAL)
  else()
    add_executable(kpack::kpack IMPORTED)
  endif()
  set_target_properties(kpack::kpack PROPERTIES
    IMPORTED_LOCATION "${arg_EXECUTABLE}"
    KPACK_TRITON_HELPER "${arg_TRITON_HELPER}"
    KPACK_RUNTIME_DIR "${arg_RUNTIME_DIR}"
    KPACK_TUNE_DIR "${arg_TUNE_DIR}"
    KPACK_VERSION "${arg_VERSION}"
    KPACK_BUILD_TARGET "${arg_BUILD_TARGET}")
endfunction()

# The runtime, compiled once per project as the OBJECT library
# kpack_runtime; every package's archive takes a copy of its objects, as
# Meson's libraries do, so each archive is self-contained and two of them
# link into one program (the linker takes each object from the first archive
# that provides it).  kpack.h alone is copied to a public include directory:
# the runtime's private headers (driver.h, errors.h) must not shadow the
# engine's own.
function(_kpack_runtime caller)
  if(TARGET kpack_runtime)
    return()
  endif()
  get_target_property(runtime_dir kpack::kpack KPACK_RUNTIME_DIR)
  if(NOT EXISTS "${KPACK_CUDA_ROOT}/include/cuda.h")
    message(FATAL_ERROR "${caller}: no cuda.h in KPACK_CUDA_ROOT (${KPACK_CUDA_ROOT}/include): set KPACK_CUDA_ROOT to the CUDA Toolkit's root")
  endif()
  # Every .c of the runtime's directory is the runtime (runtime/meson.build
  # lists the same files; tests/e2e/cmake_engine.sh checks that they agree).
  # Not CONFIGURE_DEPENDS, which would cost every build, a no-op one too, a
  # step: a source tree reconfigures when runtime/meson.build changes.
  file(GLOB sources "${runtime_dir}/*.c")
  add_library(kpack_runtime OBJECT ${sources})
  target_include_directories(kpack_runtime PRIVATE "${runtime_dir}" "${KPACK_CUDA_ROOT}/include")
  # C11 without GNU extensions, as kpack's Meson build compiles it;
  # position-independent, so a package can go into a shared library.
  set_target_properties(kpack_runtime PROPERTIES
    C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  set(public_dir "${CMAKE_BINARY_DIR}/kpack_runtime/include")
  configure_file("${runtime_dir}/kpack.h" "${public_dir}/kpack.h" COPYONLY)
  set_property(GLOBAL PROPERTY KPACK_PUBLIC_INCLUDE_DIR "${public_dir}")
endfunction()

function(kpack_add_package target manifest)
  set(caller "kpack_add_package(${target})")
  cmake_parse_arguments(PARSE_ARGV 2 arg
    "ALLOW_DEBUG_KERNELS;ALLOW_STALE_TUNING"
    "HEADER;COMPRESS;CACHE_DIR;LAUNCHER;JOBS;JOB_MEMORY;BATCH;PYTHON;ROOT;TUNER"
    "ARCHS;INCLUDE_DIRS;PYTHON_PATH;EXTRA_ARGS")
  if(arg_UNPARSED_ARGUMENTS)
    list(JOIN arg_UNPARSED_ARGUMENTS " " unknown)
    message(FATAL_ERROR "${caller}: unknown arguments: ${unknown}")
  endif()
  if(arg_KEYWORDS_MISSING_VALUES)
    list(JOIN arg_KEYWORDS_MISSING_VALUES " " keywords)
    message(FATAL_ERROR "${caller}: no value for ${keywords}")
  endif()
  if(NOT TARGET kpack::kpack)
    message(FATAL_ERROR "${caller}: no kpack::kpack here: call find_package(kpack) in this directory or a parent, or add_subdirectory(<kpack>/packaging/cmake) before")
  endif()
  # The launchers are C and the fatbins a .S (.incbin) that the C compiler
  # assembles; a language is usable only in the directory that enabled it
  # and below, so it cannot be enabled from here.
  if(NOT CMAKE_C_COMPILER_LOADED OR NOT CMAKE_ASM_COMPILER_LOADED)
    message(FATAL_ERROR "${caller}: enable the C and ASM languages first (project(<name> C CXX ASM) or enable_language(C ASM)): the launchers are C and the fatbins are embedded by a .S file")
  endif()
  # Absolute paths, normalized, without a trailing slash (ROOT "." as well).
  get_filename_component(manifest "${manifest}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${manifest}" OR IS_DIRECTORY "${manifest}")
    message(FATAL_ERROR "${caller}: no package file ${manifest}")
  endif()
  _kpack_runtime("${caller}")

  # Everything kpack writes for this package lies under one directory.
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}.kpack")
  if(NOT arg_HEADER)
    set(arg_HEADER "${target}.h")
  endif()
  set(header "${out}/include/${arg_HEADER}")
  set(launcher "${out}/${target}_launch.c")
  set(asm "${out}/${target}_fatbins.S")
  set(inventory "${out}/${target}.json")
  set(depfile "${out}/${target}.d")
  set(outputs "${header}" "${launcher}" "${asm}" "${inventory}")
  set(tuner_args "")
  if(arg_TUNER)
    set(tuner_tables "${out}/${target}_tune.c")
    list(APPEND outputs "${tuner_tables}")
    set(tuner_args --tuner "${tuner_tables}")
  endif()
  set(work "${out}/work")

  if(NOT arg_ROOT)
    set(arg_ROOT "${PROJECT_SOURCE_DIR}")
  endif()
  get_filename_component(arg_ROOT "${arg_ROOT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_target_property(helper kpack::kpack KPACK_TRITON_HELPER)
  get_target_property(build_target kpack::kpack KPACK_BUILD_TARGET)

  set(args --root "${arg_ROOT}" --cuda-root "${KPACK_CUDA_ROOT}" --triton-helper "${helper}")
  if(KPACK_NINJA)
    list(APPEND args --ninja "${KPACK_NINJA}")
  else()
    list(APPEND args --ninja none)
  endif()
  if(arg_ARCHS)
    list(JOIN arg_ARCHS "," archs)
    list(APPEND args --archs "${archs}")
  endif()
  foreach(dir IN LISTS arg_INCLUDE_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args -I "${dir}")
  endforeach()
  foreach(dir IN LISTS arg_PYTHON_PATH)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args --python-path "${dir}")
  endforeach()
  if(arg_COMPRESS)
    list(APPEND args --compress-mode "${arg_COMPRESS}")
  endif()
  if(NOT DEFINED arg_CACHE_DIR AND KPACK_CACHE_DIR)
    set(arg_CACHE_DIR "${KPACK_CACHE_DIR}")
  endif()
  if(arg_CACHE_DIR)
    get_filename_component(arg_CACHE_DIR "${arg_CACHE_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
    list(APPEND args --cache-dir "${arg_CACHE_DIR}")
  endif()
  if(NOT DEFINED arg_LAUNCHER)
    set(arg_LAUNCHER "${KPACK_NVCC_LAUNCHER}")
  endif()
  if(arg_LAUNCHER)
    list(APPEND args --nvcc-launcher "${arg_LAUNCHER}")
  endif()
  if(NOT DEFINED arg_JOBS)
    set(arg_JOBS "${KPACK_JOBS}")
  endif()
  if(arg_JOBS)
    list(APPEND args -j "${arg_JOBS}")
  endif()
  if(arg_JOB_MEMORY)
    list(APPEND args --job-memory "${arg_JOB_MEMORY}")
  endif()
  if(arg_BATCH)
    list(APPEND args --batch "${arg_BATCH}")
  endif()
  if(NOT DEFINED arg_PYTHON)
    set(arg_PYTHON "${KPACK_PYTHON}")
  endif()
  if(arg_PYTHON)
    list(APPEND args --python "${arg_PYTHON}")
  endif()
  # As kpack's Meson build: only a Debug build lets through debug kernels
  # that no manifest allows; RelWithDebInfo is shipped, so it refuses them.
  if(arg_ALLOW_DEBUG_KERNELS OR CMAKE_BUILD_TYPE STREQUAL "Debug")
    list(APPEND args --allow-debug-kernels)
  endif()
  if(arg_ALLOW_STALE_TUNING)
    list(APPEND args --allow-stale-tuning)
  endif()
  list(APPEND args ${arg_EXTRA_ARGS})

  # kpack reruns when kpack itself or its Triton helper changes; the
  # depfile adds every manifest, source, header and tuning file it read.
  get_filename_component(helper_dir "${helper}" DIRECTORY)
  file(GLOB helper_files "${helper_dir}/*.py")
  set(depends "${manifest}" "$<TARGET_FILE:kpack::kpack>" ${helper_files})
  if(build_target)
    list(APPEND depends "${build_target}")
  endif()
  cmake_path(RELATIVE_PATH manifest BASE_DIRECTORY "${arg_ROOT}" OUTPUT_VARIABLE shown)
  file(MAKE_DIRECTORY "${out}/include")
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND kpack::kpack build "${manifest}"
            --header "${header}" --launcher "${launcher}" --asm "${asm}" --inventory "${inventory}" ${tuner_args}
            --work-dir "${work}" --depfile "${depfile}" ${args}
    DEPENDS ${depends}
    DEPFILE "${depfile}"
    WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
    COMMENT "kpack: packaging ${shown}"
    USES_TERMINAL
    VERBATIM)

  # The launchers include kpack_internal.h (PRIVATE: the runtime's
  # directory); users of the package see its header and kpack.h only.
  get_target_property(runtime_dir kpack::kpack KPACK_RUNTIME_DIR)
  get_property(public_dir GLOBAL PROPERTY KPACK_PUBLIC_INCLUDE_DIR)
  set(THREADS_PREFER_PTHREAD_FLAG ON)  # -pthread, as kpack's Meson build and kernels.pc
  find_package(Threads REQUIRED)
  add_library(${target} STATIC "${launcher}" "${asm}" "${header}" $<TARGET_OBJECTS:kpack_runtime>)
  add_library(kpack::${target} ALIAS ${target})
  target_include_directories(${target}
    PUBLIC "$<BUILD_INTERFACE:${out}/include>" "$<BUILD_INTERFACE:${public_dir}>"
    PRIVATE "${runtime_dir}")
  target_link_libraries(${target} PUBLIC Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(${target} PROPERTIES
    C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON
    KPACK_HEADER "${header}" KPACK_INVENTORY "${inventory}" KPACK_WORK_DIR "${work}"
    KPACK_MANIFEST "${manifest}")
  if(arg_TUNER)
    _kpack_tuner("${target}" "${arg_TUNER}" "${tuner_tables}")
  endif()
endfunction()

# The tuning harness of a package, as kpack's Meson build makes
# kernels-tune: the generated tables, the fixed main (which dlopens
# libcuda.so.1 as the runtime does: cuda.h for its types only) and the
# package's library.
function(_kpack_tuner package name tables)
  get_target_property(tune_dir kpack::kpack KPACK_TUNE_DIR)
  get_target_property(runtime_dir kpack::kpack KPACK_RUNTIME_DIR)
  add_executable(${name} "${tables}" "${tune_dir}/kpack_tune_main.c")
  target_include_directories(${name} PRIVATE "${tune_dir}" "${runtime_dir}" "${KPACK_CUDA_ROOT}/include")
  set_target_properties(${name} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  find_library(KPACK_LIBM m)
  target_link_libraries(${name} PRIVATE ${package} $<$<BOOL:${KPACK_LIBM}>:${KPACK_LIBM}>)
endfunction()

cmake_policy(POP)
