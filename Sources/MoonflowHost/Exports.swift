// `import MoonflowHost` is all an app needs day to day. Besides this module's own types it
// hands on, one by one, the few types of the package's inner modules an app names
// (docs/embedding.md): the feature it drives, its errors, and the values Lua state is made
// of. The rest of LuaKit and MoonflowLua stays out of an app's namespace, and what tools and
// tests use more than apps is behind imports of its own (MoonflowHostTools: every event, the
// virtual clock, plugin sources, reloading; MoonflowRepositories). scripts/public-api counts
// what an app meets from this list.
@_exported import enum LuaKit.LuaValue
@_exported import protocol MoonflowLua.RunningFeature
@_exported import struct MoonflowLua.FeatureError
