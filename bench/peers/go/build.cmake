# build.cmake - builds the Go peers: cmake -DGO=<go> -DSRC=<this dir> -DOUT=<binary> -P build.cmake
# (run by bench/CMakeLists.txt's go_peers target at build time).
#
# A failed `go build` does not fail the project's build: the old binary is removed and the reason
# is written to <OUT>.failed, which bench/run.py reports as "missing (go build failed: ...)".  The
# module has no dependencies; GOTOOLCHAIN=local keeps a newer go from fetching a toolchain,
# GOWORK=off ignores any go.work above, CGO_ENABLED=0 gives a static binary.  Without HOME (and
# no GOCACHE / XDG_CACHE_HOME) the build cache goes next to the binary.
set(env GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=)
if("$ENV{GOCACHE}" STREQUAL "" AND "$ENV{XDG_CACHE_HOME}" STREQUAL "" AND "$ENV{HOME}" STREQUAL "")
  list(APPEND env "GOCACHE=${OUT}.gocache")
endif()
if("$ENV{GOPATH}" STREQUAL "" AND "$ENV{HOME}" STREQUAL "")
  list(APPEND env "GOPATH=${OUT}.gopath")
endif()
file(REMOVE "${OUT}.failed")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ${env} "${GO}" build -trimpath -o "${OUT}.tmp" .
  WORKING_DIRECTORY "${SRC}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
if(rc EQUAL 0)
  file(RENAME "${OUT}.tmp" "${OUT}")
else()
  file(REMOVE "${OUT}" "${OUT}.tmp")
  string(STRIP "${out}" out)
  string(REPLACE "\n" " | " oneline "${out}")
  file(WRITE "${OUT}.failed" "${oneline}\n")
  message(WARNING "ursa bench: go build of the Go peers failed (run.py will report them as missing):\n${out}")
endif()
