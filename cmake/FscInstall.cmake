# Installing fragscope: one library for C and C++ users, the command line,
# its man page, the PyTorch shim, CMake and pkg-config files, and the
# Debian package (cpack -G DEB).
#
# The code is built as one static library per part (cmake/FscLibrary.cmake),
# which keeps each part's headers private to it. Users get a single
# libfragscope instead, made from those archives:
#   libfragscope.so  every part's objects (--whole-archive), exporting only
#                    the public API: fsc_* functions declared in
#                    include/fragscope/ (cmake/libfragscope.map makes the
#                    internal fsc__* and everything else local);
#   libfragscope.a   the parts' archives joined (cmake/merge_archives.cmake).
# The command line and the tests keep linking the parts directly.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The parts of libfragscope, users of a part before the part.
set(FSC_LIB_PARTS fsc_viewer fsc_whatif fsc_analyzer fsc_report fsc_source fsc_pytorch
    fsc_recorder fsc_allocator fsc_common)
set(FSC_INSTALL_PYTHONDIR "${CMAKE_INSTALL_LIBDIR}/fragscope/python" CACHE STRING
    "Where the PyTorch shim (fragscope_torch.py, libfragscope_torch.so) is installed, under the prefix")
set(FSC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/fragscope")

# Programs linking a sanitizer build of the library need the runtimes too.
set(FSC_USER_LINK_FLAGS "")
if(FSC_SANITIZE)
  set(FSC_USER_LINK_FLAGS "-fsanitize=address,undefined")
endif()

# --- libfragscope.so ---------------------------------------------------------
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/libfragscope.c CONTENT
  "/* libfragscope.so holds the objects of fragscope's parts (cmake/FscInstall.cmake). */\ntypedef int fsc__libfragscope_unit;\n")
add_library(fragscope_shared SHARED ${PROJECT_BINARY_DIR}/libfragscope.c)
target_link_libraries(fragscope_shared PRIVATE
  -Wl,--whole-archive ${FSC_LIB_PARTS} -Wl,--no-whole-archive)
target_link_options(fragscope_shared PRIVATE
  -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/libfragscope.map)
# Every symbol resolved at link time; not with sanitizers, whose runtime
# clang links only into programs.
if(NOT FSC_SANITIZE AND NOT FSC_TSAN AND NOT FSC_FUZZ)
  target_link_options(fragscope_shared PRIVATE -Wl,--no-undefined)
endif()
set_target_properties(fragscope_shared PROPERTIES
  OUTPUT_NAME fragscope
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/libfragscope.map
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}
  INSTALL_RPATH_USE_LINK_PATH ON)   # the CUDA runtime outside the system's folders

# --- libfragscope.a ----------------------------------------------------------
set(_fsc_archive ${PROJECT_BINARY_DIR}/libfragscope.a)
set(_fsc_archives "")
foreach(part ${FSC_LIB_PARTS})
  list(APPEND _fsc_archives "$<TARGET_FILE:${part}>")
endforeach()
list(JOIN _fsc_archives "|" _fsc_archives)
add_custom_command(
  OUTPUT ${_fsc_archive}
  COMMAND ${CMAKE_COMMAND} -DAR=${CMAKE_AR} -DRANLIB=${CMAKE_RANLIB}
          -DOUT=${_fsc_archive} -DWORK=${PROJECT_BINARY_DIR}/libfragscope.a.parts
          "-DLIBS=${_fsc_archives}" -P ${PROJECT_SOURCE_DIR}/cmake/merge_archives.cmake
  DEPENDS ${FSC_LIB_PARTS} ${PROJECT_SOURCE_DIR}/cmake/merge_archives.cmake
  COMMENT "Joining the parts into libfragscope.a"
  VERBATIM)
add_custom_target(fragscope_static ALL DEPENDS ${_fsc_archive})

# What a program linking libfragscope.a must link as well.
set(FSC_STATIC_LIBS "-lzstd -lsqlite3 -lcjson -lm -pthread")
set(FSC_CONFIG_CUDA OFF)
if(FSC_HAVE_CUDA)
  set(FSC_CONFIG_CUDA ON)
  string(APPEND FSC_STATIC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()

# --- man page: from the same help texts as docs/cli.md -------------------------
set(_fsc_man ${PROJECT_BINARY_DIR}/fragscope.1)
add_custom_command(
  OUTPUT ${_fsc_man}
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/gen-cli-doc.sh --man ${_fsc_man} $<TARGET_FILE:fragscope>
  DEPENDS fragscope ${PROJECT_SOURCE_DIR}/scripts/gen-cli-doc.sh
  COMMENT "Writing the man page fragscope.1"
  VERBATIM)
add_custom_target(fragscope_man ALL DEPENDS ${_fsc_man})

# --- install -----------------------------------------------------------------
install(TARGETS fragscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS fragscope_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${_fsc_archive} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fragscope
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/fragscope/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fragscope)
install(FILES ${_fsc_man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
if(TARGET fragscope_torch)
  target_link_options(fragscope_torch PRIVATE
    -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/fragscope_torch.map)
  set_target_properties(fragscope_torch PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON
    LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/fragscope_torch.map)
  install(TARGETS fragscope_torch LIBRARY DESTINATION ${FSC_INSTALL_PYTHONDIR})
  install(FILES ${PROJECT_BINARY_DIR}/fragscope_torch.py DESTINATION ${FSC_INSTALL_PYTHONDIR})
  # Debian's python3 reads .pth files in /usr/lib/python3/dist-packages: with
  # this one, `import fragscope_torch` works once the .deb is installed. Its
  # line is relative to that folder.
  set(_fsc_pthdir lib/python3/dist-packages)
  file(RELATIVE_PATH _fsc_pth /p/${_fsc_pthdir} /p/${FSC_INSTALL_PYTHONDIR})
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/fragscope_torch.pth CONTENT "${_fsc_pth}\n")
  install(FILES ${PROJECT_BINARY_DIR}/fragscope_torch.pth DESTINATION ${_fsc_pthdir})
endif()

# fragscopeConfig.cmake: imported targets fragscope::fragscope (shared) and
# fragscope::fragscope_static; relocatable (paths from its own location).
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fragscopeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fragscopeConfig.cmake
  INSTALL_DESTINATION ${FSC_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# 0.x releases may change the API between minor versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fragscopeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fragscopeConfig.cmake
              ${PROJECT_BINARY_DIR}/fragscopeConfigVersion.cmake
        DESTINATION ${FSC_INSTALL_CMAKEDIR})

# fragscope.pc, relocatable through ${pcfiledir}.
file(RELATIVE_PATH FSC_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" FSC_PC_TO_PREFIX "${FSC_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/fragscope.pc.in ${PROJECT_BINARY_DIR}/fragscope.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fragscope.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# --- Debian package: cpack -G DEB ----------------------------------------------
set(CPACK_PACKAGE_NAME fragscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "record and explain GPU caching allocator fragmentation and out-of-memory errors")
set(CPACK_PACKAGE_DESCRIPTION
  "fragscope records every allocation, free, split and merge of a PyTorch-style GPU caching allocator into a compressed trace, imports PyTorch memory snapshots, and explains the run: fragmentation inside and between blocks, the cause of each out-of-memory, bin usage, and which allocator settings would have avoided it. The package holds the fragscope command, its man page and libfragscope (shared and static, C headers, CMake and pkg-config files).")
if(FSC_HAVE_CUDA)
  # libcudart comes with the CUDA toolkit, not from a Debian package, so
  # dpkg-shlibdeps cannot name it: say so.
  string(APPEND CPACK_PACKAGE_DESCRIPTION
    " This build also holds the CUDA backend and the PyTorch shim (module fragscope_torch); libfragscope and the shim need the CUDA runtime libcudart.so.${CUDAToolkit_VERSION_MAJOR} of the CUDA toolkit, which is not among the dependencies.")
endif()
set(CPACK_PACKAGE_CONTACT "fragscope maintainers <maintainers@fragscope.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Depends from the ELF files' needs (libzstd1, libsqlite3-0, libcjson1, libc6).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
include(CPack)

# For python/setup.py, which reuses a configured build: was CUDA found?
set(FSC_HAVE_CUDA_FOUND ${FSC_HAVE_CUDA} CACHE INTERNAL "the CUDA backend and PyTorch shim are built")
