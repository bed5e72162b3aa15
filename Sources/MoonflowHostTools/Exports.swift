// `import MoonflowHostTools`: what tools, tests and a debug build drive a host with, beyond
// the everyday surface of `import MoonflowHost` (docs/embedding.md): every event of a
// feature (`observe`, `FeatureEvent`), the virtual clock, plugin sources and reloading from
// Swift. Like MoonflowHost it hands on single types only.
@_exported import enum MoonflowLua.FeatureEvent
@_exported import struct MoonflowLua.ReloadChanges
@_exported import struct MoonflowLua.ReloadReport
