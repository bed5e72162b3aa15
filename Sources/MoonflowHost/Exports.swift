// `import MoonflowHost` is all an app needs: the feature types (`RunningFeature`,
// `FeatureEvent`, `FeatureError`, `SchemaError`) and `LuaValue` come with it.
@_exported import LuaKit
@_exported import MoonflowLua
