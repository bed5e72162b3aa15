// `TestScheduler` (virtual time) lives in Streams, since `moonflow run --clock
// virtual` and the test store use it in production; tests that import
// StreamsTesting keep seeing it.
@_exported import Streams
