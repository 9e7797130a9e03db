# Cross build for 64-bit Arm Linux with Debian's cross compiler and multiarch arm64 packages
# (`dpkg --add-architecture arm64`; scripts/install-deps aarch64 installs them). Tests run
# through qemu-user: CMake prefixes every test executable with the emulator below, and the
# test harness (tests/sdk/test_util.cpp) prefixes the programs the tests launch themselves.
#   cmake -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# No `-L /usr/aarch64-linux-gnu`: the programs load the multiarch arm64 loader and libraries
# from / (libc6:arm64 comes with the -dev packages). Taking the loader from the cross
# runtime (libc6-arm64-cross) while libc.so.6 resolves to the multiarch one mixes two glibc
# builds whose private loader state differs: the first pthread_create then loops forever in
# the stack cache.
find_program(INPROF_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${INPROF_QEMU_AARCH64}")

# Programs (compilers, tools) come from the host; libraries and headers from the arm64
# multiarch directories, never the host's x86-64 ones.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# pkg-config must read the arm64 .pc files only: a host luajit.pc or libdw.pc would link
# x86-64 libraries into arm64 programs.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
