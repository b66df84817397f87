# Precompiled headers for the suite's cold build (PANDORA_PCH).
#
# Why: the test suite starts with a Debug (ASan + UBSan) build from a clean
# clone on 2 cores, and about half of each translation unit's compile time
# was spent parsing and instantiating the same standard library, fmt and
# GoogleTest headers again (clang -ftime-trace: 4.6 of 15.6 s of
# tests/workloads/report_test.cc in "Source" alone). A few precompiled
# headers, built once and reused by every target (REUSE_FROM an anchor
# target per flag set), hold them. Cold Debug build of the tree on the
# shared 2-core machine: 9 min 15 s without, 5 min 27 s with.
#
# What goes in: only third-party headers that do not change with this tree
# (standard library, fmt, nlohmann-json, and GoogleTest for targets that
# link it). Project headers stay out, so editing one never rebuilds a PCH,
# and a missing #include of a project header still fails the build.
#
# The cost: a source that forgets a standard include (say <vector>) still
# compiles with the PCH. Release builds (deploy/setup.sh release: benchmarks,
# the demo) default to no PCH and catch that, as does the public-header check
# (client/CMakeLists.txt), which never uses one.
#
# pandora_apply_precompiled_headers() is called once, at the end of the top
# level CMakeLists.txt, and walks every target defined in the tree; a target
# opts out with the target property PANDORA_NO_PCH.

set(PANDORA_PCH_STD_HEADERS
  <algorithm> <array> <atomic> <chrono> <condition_variable> <cstddef> <cstdint> <cstdio> <cstdlib>
  <cstring> <deque> <filesystem> <fstream> <functional> <map> <memory> <mutex> <optional> <random> <set>
  <span> <sstream> <string> <string_view> <thread> <unordered_map> <utility> <vector>
  <fmt/format.h> <nlohmann/json.hpp>)
set(PANDORA_PCH_TEST_HEADERS <gtest/gtest.h>)

# Every target defined in DIR and its subdirectories, into OUT.
function(pandora_targets_under dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    pandora_targets_under("${sub}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The headers of FLAVOUR (std, or test: std + GoogleTest), into OUT.
function(pandora_pch_headers flavour out)
  set(headers ${PANDORA_PCH_STD_HEADERS})
  if(flavour STREQUAL "test")
    list(APPEND headers ${PANDORA_PCH_TEST_HEADERS})
  endif()
  set(${out} ${headers} PARENT_SCOPE)
endfunction()

# The anchor target whose PCH targets of KIND (lib or exe) and FLAVOUR (std
# or test) reuse, created on first use; its name into OUT. Clang only
# loads a PCH built with the same position-independence (-fPIC for
# libraries, -fPIE for executables) and sanitizers, so each combination has
# its own; the anchors link what the users link (fmt, GoogleTest) so that
# the definitions those bring (FMT_SHARED, GTEST_HAS_PTHREAD) match too.
function(pandora_pch_anchor kind flavour out)
  set(anchor pandora_pch_${kind}_${flavour})
  if(NOT TARGET ${anchor})
    set(src ${PROJECT_BINARY_DIR}/pch_anchor/${anchor}.cc)
    file(CONFIGURE OUTPUT ${src} CONTENT "int main() { return 0; }\n")
    if(kind STREQUAL "exe")
      add_executable(${anchor} ${src})
    else()
      add_library(${anchor} OBJECT ${src})
    endif()
    target_link_libraries(${anchor} PRIVATE fmt::fmt)
    if(flavour STREQUAL "test")
      target_link_libraries(${anchor} PRIVATE GTest::gtest)
    endif()
    pandora_pch_headers(${flavour} headers)
    target_precompile_headers(${anchor} PRIVATE ${headers})
  endif()
  set(${out} ${anchor} PARENT_SCOPE)
endfunction()

function(pandora_apply_precompiled_headers)
  if(NOT PANDORA_PCH)
    return()
  endif()
  pandora_targets_under("${PROJECT_SOURCE_DIR}" targets)
  set(count 0)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      continue()
    endif()
    get_target_property(opt_out ${t} PANDORA_NO_PCH)
    if(opt_out)
      continue()
    endif()
    # Only targets with sources of their own (a library made only of other
    # targets' objects has nothing to precompile for). The tree has no C
    # sources, so the header list needs no per-language guard.
    get_target_property(sources ${t} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cc$")
    if(NOT sources)
      continue()
    endif()
    get_target_property(links ${t} LINK_LIBRARIES)
    get_target_property(options ${t} COMPILE_OPTIONS)
    set(flavour std)
    if(links AND links MATCHES "GTest::")
      set(flavour test)
    endif()
    if(options AND options MATCHES "-fsanitize=fuzzer")
      # libFuzzer targets: their own flags, their own PCH (three of them).
      pandora_pch_headers(${flavour} headers)
      target_precompile_headers(${t} PRIVATE ${headers})
    else()
      if(type STREQUAL "EXECUTABLE")
        set(kind exe)
      else()
        set(kind lib)
      endif()
      pandora_pch_anchor(${kind} ${flavour} anchor)
      target_precompile_headers(${t} REUSE_FROM ${anchor})
    endif()
    math(EXPR count "${count} + 1")
  endforeach()
  message(STATUS "Precompiled headers: ${count} targets (PANDORA_PCH=ON)")
endfunction()
