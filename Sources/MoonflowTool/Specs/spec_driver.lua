-- Runs busted's core on one spec file for `moonflow test` (SpecRunner.swift) and reports
-- a row per test as it starts (`started`, its ordinal) and as it ends. The first `skip`
-- tests are passed over unreported: they ran in a Lua state a stuck test left behind.
-- With `source` (`moonflow test --explore`), that text is the spec, named `file`.
-- `stdoutPath` is the temporary file that becomes the spec's `io.stdout` (SpecStdout).
local file, filter, report, arm, testLimit, skip, source, stdoutPath = ...
skip = skip or 0

-- io.stdout as busted gives it, a real file (io.type is "file"), and the default output, so
-- io.write writes there too; the host reads it back and prints it where `print` goes. Unbuffered,
-- and flushed before each print and each result, so the lines keep the order they were written.
local out = stdoutPath and io and io.open(stdoutPath, "a")
if stdoutPath then os.remove(stdoutPath) end
local function flushOut() end
if out then
  out:setvbuf("no")
  io.stdout = out
  io.output(out)
  local iotype, output = io.type, io.output
  flushOut = function() if iotype(out) == "file" then out:flush() end end
  io.write = function(...) return output():write(...) end
  local hostPrint = print
  print = function(...)
    flushOut()
    return hostPrint(...)
  end
end
local busted = require "busted.core"()
require "busted"(busted)

local messages = {}
local function add(row) flushOut(); report(row) end

local function where(trace)
  if type(trace) == "table" and trace.short_src and trace.currentline then
    return trace.short_src .. ":" .. trace.currentline
  end
end

local ordinal = 0
local passedOver = {}

local function describePath(element)
  local names = {}
  local parent = busted.context.parent(element)
  while parent and parent.descriptor ~= "file" do
    if parent.name then table.insert(names, 1, parent.name) end
    parent = busted.context.parent(parent)
  end
  return names
end

if arm and testLimit then
  -- Every piece of the spec's own code under the deadline, each piece on its own: the
  -- file's top level, a describe body, an `it` body, setup, teardown, before_each,
  -- after_each (busted runs each as `element.run`), and a `finally`. What busted does
  -- around them (the executor of a whole block, its reporters) is not timed: a loop
  -- anywhere in a spec file fails at its line instead of hanging the run.
  local safe = busted.safe
  busted.safe = function(descriptor, run, element)
    if run == element.run or descriptor == "finally" then
      local body = run
      run = function(...)
        local _ <close> = arm(testLimit)
        return body(...)
      end
    end
    return safe(descriptor, run, element)
  end
end

-- Outside the deadline's wrapper: it sees each test's own body.
do
  local safe = busted.safe
  busted.safe = function(descriptor, run, element)
    if descriptor == "it" and run == element.run then
      ordinal = ordinal + 1
      if ordinal <= skip then
        passedOver[element] = true
        run = function() end
      else
        report { started = ordinal, name = element.name or "", path = describePath(element), where = where(element.trace) }
      end
    end
    return safe(descriptor, run, element)
  end
end

busted.subscribe({ "test", "end" }, function(element, _parent, status)
  if passedOver[element] then return nil, true end
  local m = messages[element]
  add {
    name = element.name or "", path = describePath(element), status = status,
    message = m and m.message, where = (m and m.where) or where(element.trace),
    duration = element.duration,
  }
  return nil, true
end)

-- Failures and errors: inside an `it` they belong to its result; anywhere
-- else (a describe body, before_each, the file itself) they are a result of their own, an error.
local function record(element, _parent, message, trace)
  local text = type(message) == "string" and message or tostring(message)
  -- The message starts with the spec's file:line when the failure was raised there.
  local at = text:match("^([^\n]-:%d+): ") or where(trace)
  if element.descriptor == "it" or element.descriptor == "pending" then
    if not messages[element] then messages[element] = { message = text, where = at } end
  else
    local name = element.descriptor == "file" and "(loading the spec file)"
      or ("(" .. tostring(element.descriptor) .. (element.name and (" " .. element.name) or "") .. ")")
    add {
      name = name, path = describePath(element), status = "error",
      message = text, where = at,
    }
  end
  return nil, true
end
busted.subscribe({ "failure" }, record)
busted.subscribe({ "error" }, record)

if filter then
  require "busted.modules.filter_loader"()(busted, {
    tags = {}, excludeTags = {}, filterOut = {},
    filter = { (filter:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) },
    list = false, nokeepgoing = false, suppressPending = false,
  })
end

local chunk, err
if source then chunk, err = load(source, "=" .. file, "t") else chunk, err = loadfile(file, "t") end
if not chunk then
  add { name = "(loading the spec file)", path = {}, status = "error", message = err, where = file }
  return
end
local function getTrace(_, info)
  local cut = info.traceback:find("\n%s*%[C]")
  info.traceback = info.traceback:sub(1, cut)
  return info
end
busted.executors.file(file, setmetatable({ getTrace = getTrace }, { __call = chunk }))
require "busted.execute"(busted)(1, {})
busted.publish({ "exit" })
flushOut()
