---@meta moonflow
-- LuaLS (lua-language-server) annotations of the `moonflow` module (require "moonflow")
-- and of `moonflow.test`, as the runtime exports them. Written by `moonflow types --luals --api`;
-- point LuaLS at its folder (.luarc.json: "workspace.library": ["types/luals"]).

---A declared field type: "string", "integer", "number", "boolean", "table" or "any", with a trailing ? when optional.
---@alias moonflow.FieldType string

---The declarations of actions, mutations or outputs: name to { field = "type" }.
---@alias moonflow.Shapes table<string, table<string, moonflow.FieldType>>

---A type in the state's schema language: a field type ("integer", "string?"), { "list", of = T },
---{ "map", of = T }, { "enum", "idle", "busy" }, or a record { field = T } ({ "record?", ... } when optional).
---@alias moonflow.SchemaType string|table

---How the streams of one action type combine.
---@alias moonflow.Strategy "merge"|"latest"|"concat"|"exhaust"

---A table with a string `type`: an action, a mutation or an effect.
---@class moonflow.Message
---@field type string

---What `env` holds in `handle` and in effect handlers.
---@class moonflow.Env
---@field services table<string, any> Lua and Swift services, and repositories, by name
---@field interactors table<string, moonflow.Interactor> request interactors, by name
---@field cancellable fun(id: string, stream: moonflow.Stream): moonflow.Stream `stream`, stopped by `env.cancel(id)` while it runs
---@field cancel fun(id: string, ...: string): moonflow.Stream when started, stops the feature's running streams marked with these ids

---A request interactor as a feature sees it (`env.interactors.NAME`).
---@class moonflow.Interactor
local Interactor = {}

---Performs a request; its response comes as a stream.
---@param request moonflow.Message
---@return moonflow.Stream
function Interactor:perform(request) end

---A stream of values (a cold producer: it runs when the runtime starts it).
---@class moonflow.Stream
local Stream = {}

---@param fn fun(value: any): any
---@return moonflow.Stream
function Stream:map(fn) end

---@param fn fun(value: any): boolean
---@return moonflow.Stream
function Stream:filter(fn) end

---Each value to a stream, combined by `strategy` (merge when not given).
---@param fn fun(value: any): moonflow.Stream|any
---@param strategy? moonflow.Strategy
---@return moonflow.Stream
function Stream:flatMap(fn, strategy) end

---@param fn fun(value: any): moonflow.Stream|any
---@return moonflow.Stream
function Stream:flatMapLatest(fn) end

---@param fn fun(value: any): moonflow.Stream|any
---@return moonflow.Stream
function Stream:concatMap(fn) end

---The values given, then the stream's.
---@param ... any
---@return moonflow.Stream
function Stream:startWith(...) end

---On a failure, goes on with the stream `fn` returns for the error.
---@param fn fun(err: any): moonflow.Stream|any
---@return moonflow.Stream
function Stream:catchError(fn) end

---@param seed any
---@param fn fun(acc: any, value: any): any
---@return moonflow.Stream
function Stream:scan(seed, fn) end

---Each value with the latest of `other` (as a pair, or combined by `fn`).
---@param other moonflow.Stream
---@param fn? fun(value: any, latest: any): any
---@return moonflow.Stream
function Stream:withLatestFrom(other, fn) end

---@return moonflow.Stream
function Stream:distinctUntilChanged() end

---@param n integer
---@return moonflow.Stream
function Stream:take(n) end

---@param other moonflow.Stream
---@return moonflow.Stream
function Stream:takeUntil(other) end

---@param ms integer
---@return moonflow.Stream
function Stream:delay(ms) end

---@param ms integer
---@return moonflow.Stream
function Stream:debounce(ms) end

---@param ms integer
---@return moonflow.Stream
function Stream:throttle(ms) end

---Fails with `timed out after MS ms` (or goes on as `other`) when no value comes within `ms`
---of the subscription or of the previous value; the stream is stopped then.
---@param ms integer
---@param other? moonflow.Stream
---@return moonflow.Stream
function Stream:timeout(ms, other) end

---On a failure, subscribes again, up to `n` more times, after `backoff` ms (a number, or a
---function of the retry's number 1, 2, ...); the last failure passes through.
---@param n integer
---@param options? { backoff?: integer|fun(retry: integer): integer }
---@return moonflow.Stream
function Stream:retry(n, options) end

---Starts the stream; returns a function that stops it.
---@param onValue? fun(value: any)
---@param onError? fun(err: any)
---@param onCompleted? fun()
---@return fun()
function Stream:subscribe(onValue, onError, onCompleted) end

---The task handed to the function of `mf.task`.
---@class moonflow.Task
local Task = {}

---Sends a value from the task's stream.
---@param value any
function Task:emit(value) end

---Waits for the stream's first value: true and the value, or false and the error.
---@param stream moonflow.Stream
---@return boolean ok
---@return any valueOrError
function Task:await(stream) end

---@class moonflow.FeatureDefinition
---@field name string
---@field version? integer the state shape version (hot reload migrates when it changes)
---@field initial table the first state
---@field state? table<string, moonflow.SchemaType> what the state holds over its life
---@field actions moonflow.Shapes
---@field mutations moonflow.Shapes
---@field outputs? moonflow.Shapes the effects that go out to the host
---@field handle fun(action: moonflow.Message, state: table, env: moonflow.Env): (moonflow.Message|moonflow.Stream|nil)
---@field reduce fun(state: table, mutation: moonflow.Message): (table, moonflow.Message?)
---@field effects? table<string, fun(effect: moonflow.Message, state: table, env: moonflow.Env): (moonflow.Message|moonflow.Stream|nil)>
---@field strategy? table<string, moonflow.Strategy>
---@field services? table<string, function>
---@field interactors? table<string, moonflow.InteractorDefinition|string>
---@field repositories? table<string, table>
---@field migrate? fun(old: table, fromVersion: integer): table
---@field invariants? table<string, fun(state: table): boolean?> what must hold after every step (`T.explore` checks them)

---@class moonflow.ComposeDefinition
---@field name string
---@field version? integer
---@field state? table<string, moonflow.SchemaType> what `combine` returns
---@field children table<string, moonflow.FeatureDefinition|string> child features, or plugin names
---@field route fun(action: moonflow.Message, state: table): (string?, moonflow.Message?)
---@field combine fun(states: table<string, table>): table
---@field mapEffect? fun(child: string, effect: moonflow.Message): moonflow.Message?
---@field invariants? table<string, fun(state: table): boolean?> what must hold after every step (`T.explore` checks them)

---@class moonflow.InteractorDefinition
---@field name string
---@field version? integer
---@field requests table<string, fun(request: moonflow.Message, env: moonflow.Env): moonflow.Stream|any>
---@field services? table<string, function>
---@field interactors? table<string, moonflow.InteractorDefinition|string>
---@field repositories? table<string, table>

---@class moonflow
---@field version string the runtime's version
local mf = {}

---Checks a feature definition where it is written and marks it.
---@param definition moonflow.FeatureDefinition
---@return moonflow.FeatureDefinition
function mf.feature(definition) end

---Checks a composite of features and marks it.
---@param definition moonflow.ComposeDefinition
---@return moonflow.ComposeDefinition
function mf.compose(definition) end

---Checks a request interactor and marks it.
---@param definition moonflow.InteractorDefinition
---@return moonflow.InteractorDefinition
function mf.interactor(definition) end

---One value, then the end.
---@param value any
---@return moonflow.Stream
function mf.just(value) end

---Ends at once with no value.
---@return moonflow.Stream
function mf.empty() end

---Never sends and never ends.
---@return moonflow.Stream
function mf.never() end

---Fails with `err`.
---@param err any
---@return moonflow.Stream
function mf.fail(err) end

---The items of a list, one by one.
---@param list any[]
---@return moonflow.Stream
function mf.from(list) end

---Each stream after the one before.
---@param ... moonflow.Stream
---@return moonflow.Stream
function mf.concat(...) end

---All the streams at once.
---@param ... moonflow.Stream
---@return moonflow.Stream
function mf.merge(...) end

---A list of the latest value of each stream, whenever one sends.
---@param ... moonflow.Stream
---@return moonflow.Stream
function mf.combineLatest(...) end

---`value` (0 when not given) after `ms` milliseconds.
---@param ms integer
---@param value? any
---@return moonflow.Stream
function mf.timer(ms, value) end

---0, 1, 2, ... every `ms` milliseconds.
---@param ms integer
---@return moonflow.Stream
function mf.interval(ms) end

---A coroutine as a stream: `t:emit(v)` sends, `t:await(stream)` waits.
---@param fn fun(t: moonflow.Task)
---@return moonflow.Stream
function mf.task(fn) end

---Marks a table (a new one without `t`) to encode as [] when empty.
---@generic T: table
---@param t? T
---@return T
function mf.array(t) end

---Marks a table (a new one without `t`) to encode as {} when empty.
---@generic T: table
---@param t? T
---@return T
function mf.object(t) end

---A test store: runs a feature on a clock of its own (require "moonflow.test").
---@class moonflow.test.Store
---@field state table the current state (read-only)
---@field now integer the store's clock, in ms
---@field logs string[] what the feature logged
local Store = {}

---Sends an action; `change` edits a copy of the state into what it must be after.
---@param action moonflow.Message
---@param change? fun(state: table)
function Store:send(action, change) end

---Takes a mutation that came later; `change` as in `send`. Given a type (`"loaded"`), the
---next mutation of that type, comparing only the fields of `fields` when given.
---@param mutation moonflow.Message|string
---@param fields? table|fun(state: table)
---@param change? fun(state: table)
function Store:receive(mutation, fields, change) end

---A send the feature must refuse with an error containing `text`.
---@param action moonflow.Message
---@param text string
function Store:sendRefused(action, text) end

---Takes an outward effect (from the child `from`, for a compose).
---@param effect moonflow.Message
---@param from? string
function Store:receiveEffect(effect, from) end

---Takes an error whose message contains `text`.
---@param text string
function Store:receiveError(text) end

---Moves the store's clock on.
---@param ms integer
function Store:advance(ms) end

---Fails on anything not asserted.
function Store:finish() end

function Store:skipReceived() end

function Store:skipInFlight() end

---@class moonflow.test.StoreOptions
---@field services? table<string, function|table> stubs by service name
---@field state? table a state to start from
---@field exhaustive? boolean false lets finish pass with things not asserted

---@class moonflow.test
local T = {}

---A store for a plugin (by name) or an mf.feature table.
---@param target string|moonflow.FeatureDefinition|moonflow.ComposeDefinition
---@param opts? moonflow.test.StoreOptions
---@return moonflow.test.Store
function T.store(target, opts) end

package.loaded["moonflow.test"] = T

return mf
