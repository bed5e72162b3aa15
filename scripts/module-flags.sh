# Sourced by scripts that compile against the built modules without SwiftPM (public-api,
# check-main-actor): sets `bin` and `module_flags`, what the compiler needs to import any
# of the package's modules (the C modules' maps, Lua's headers).
. scripts/build-flags.sh
bin=$(swift build "${build_flags[@]}" --show-bin-path)
# shellcheck disable=SC2046,SC2034
module_flags=(-I "$bin/Modules" -I "$bin"
  -Xcc -fmodule-map-file=Sources/CLua/module.modulemap -Xcc -fmodule-map-file="$bin/CLuaShim.build/module.modulemap"
  $(find "$bin" -maxdepth 2 -path '*.build/module.modulemap' -not -path '*CLuaShim*' -printf '-Xcc -fmodule-map-file=%p ')
  $(find "$build_scratch/checkouts" -path '*/Sources/*/module.modulemap' -printf '-Xcc -fmodule-map-file=%p ' 2>/dev/null)
  $(pkg-config --cflags lua5.4 | sed 's/-I/-Xcc -I/g'))
