# Sourced by scripts/test, scripts/fuzz and the checks that compile against a build: the
# builds scripts/test makes, each once.
#
# asan_build: every test target and binary under AddressSanitizer (LeakSanitizer at exit),
# instrumented as well for libFuzzer's coverage (what `-sanitize=fuzzer` adds: edge counters,
# comparisons, indirect calls), so scripts/fuzz links its harness against this build's
# objects instead of building the libraries a second time. Without a fuzzer linked, the
# sanitizer runtime's coverage hooks do nothing.
asan_scratch=.build-asan
asan_build=(--scratch-path "$asan_scratch" --sanitize=address
  -Xswiftc -sanitize-coverage=edge,indirect-calls,trace-cmp,inline-8bit-counters,pc-table
  -Xcc -fsanitize=fuzzer-no-link)
# tsan_build: the concurrent test targets under ThreadSanitizer.
tsan_build=(--scratch-path .build-tsan --sanitize=thread)
# MOONFLOW_BUILD: which build the checks that compile against one use (check-example,
# check-tool, check-dap, public-api, check-main-actor): "asan" (scripts/test), or unset
# for the plain debug build in .build. build_scratch: that build's folder.
case ${MOONFLOW_BUILD:-} in
  asan) build_flags=("${asan_build[@]}") build_scratch=$asan_scratch ;;
  "") build_flags=() build_scratch=.build ;;
  *) echo "MOONFLOW_BUILD is asan or unset, not '$MOONFLOW_BUILD'" >&2; exit 2 ;;
esac
