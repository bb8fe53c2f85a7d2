# fsc_library(NAME DEPS...): a static library from every .c file of the
# calling folder (an INTERFACE library while the folder has none yet).
# The folder's own headers are private to it: other parts see only
# include/fragscope/. Tests, benchmarks and fuzz targets that exercise a
# part's internals name it with fsc_internal_includes.
function(fsc_library name)
  file(GLOB _src CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
  if(_src)
    add_library(${name} STATIC ${_src})
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${ARGN})
  else()
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${ARGN})
  endif()
  set_property(TARGET ${name} PROPERTY FSC_PRIVATE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
endfunction()

# fsc_internal_includes(TARGET PART...): let TARGET include the private
# headers of the named fsc_library parts (white-box tests, fuzzers).
function(fsc_internal_includes target)
  foreach(part ${ARGN})
    get_property(_dir TARGET ${part} PROPERTY FSC_PRIVATE_DIR)
    target_include_directories(${target} PRIVATE ${_dir})
  endforeach()
endfunction()
