# Finds the Debian packages swiglu builds on. Each failure names the package
# to install, so a fresh Debian 12 machine needs no guesswork.

function(swiglu_require found package what)
  if(NOT ${found})
    message(FATAL_ERROR "swiglu needs ${what}: install the Debian package '${package}' "
                        "(apt-get install ${package})")
  endif()
endfunction()

# Debian's oneDNN is built with an OpenCL GPU runtime, and its CMake config
# does find_package(OpenCL REQUIRED), which fails with a message that names no
# package. We never use the GPU, but the config must load: check first.
find_file(swiglu_dnnl_config dnnl-config.cmake PATH_SUFFIXES
          lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/dnnl lib/cmake/dnnl lib64/cmake/dnnl)
swiglu_require(swiglu_dnnl_config libdnnl-dev "oneDNN 2.6")
file(STRINGS "${swiglu_dnnl_config}" swiglu_dnnl_ocl REGEX "set\\(DNNL_GPU_RUNTIME \"OCL\"\\)")
if(swiglu_dnnl_ocl)
  find_package(OpenCL QUIET)
  swiglu_require(OpenCL_FOUND ocl-icd-opencl-dev "the OpenCL headers and loader (oneDNN's CMake config requires them)")
endif()

find_package(dnnl 2.6 CONFIG QUIET)
swiglu_require(dnnl_FOUND libdnnl-dev "oneDNN 2.6")

find_package(xsimd 8 CONFIG QUIET)
swiglu_require(xsimd_FOUND libxsimd-dev "xsimd 8")
# Debian's xsimd target names "xtl" as a link dependency, which exists only as
# an optional header library (libxtl-dev) and would end up as a bare -lxtl.
# xsimd is header-only and we don't use its xtl complex support: drop it.
set_property(TARGET xsimd PROPERTY INTERFACE_LINK_LIBRARIES "")

# Debian's oneDNN runs on OpenMP; we call omp_set_num_threads() to keep
# oneDNN single-threaded inside our own workers.
find_package(OpenMP QUIET COMPONENTS CXX)
swiglu_require(OpenMP_CXX_FOUND libgomp1 "OpenMP (part of g++)")

find_package(Threads REQUIRED)

# The safetensors header is JSON.
find_package(nlohmann_json 3 CONFIG QUIET)
swiglu_require(nlohmann_json_FOUND nlohmann-json3-dev "nlohmann JSON")

# The Python module: Debian's interpreter (its numpy and pytest come from
# apt; a pyenv or venv python found first on PATH would have neither), its
# headers and pybind11.
if(SWIGLU_BUILD_PYTHON)
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python 3 COMPONENTS Interpreter Development.Module QUIET)
  swiglu_require(Python_FOUND python3-dev "the Python 3 headers")
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 2.6 CONFIG QUIET)
  swiglu_require(pybind11_FOUND pybind11-dev "pybind11")
endif()

# swiglu_mpi (include/swiglu/mpi.hpp): Debian's Open MPI, its C API used
# from C++ (the project enables no C compiler; MPI's C++ bindings are not used).
if(SWIGLU_BUILD_MPI)
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI QUIET COMPONENTS CXX)
  swiglu_require(MPI_CXX_FOUND libopenmpi-dev "MPI (Open MPI)")
endif()

# The `swiglu` command's argument parsing.
find_package(CLI11 CONFIG QUIET)
swiglu_require(CLI11_FOUND libcli11-dev "CLI11")

if(SWIGLU_BUILD_TESTS)
  find_package(doctest CONFIG QUIET)
  swiglu_require(doctest_FOUND doctest-dev "doctest")
endif()

if(SWIGLU_BUILD_BENCH)
  find_package(benchmark CONFIG QUIET)
  swiglu_require(benchmark_FOUND libbenchmark-dev "Google Benchmark")
endif()
