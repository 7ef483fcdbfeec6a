// The languages the local sandbox runs besides Python (which the harness runs in its own interpreter): where each
// toolchain lives on a Debian host, how a program is built once (in /work/src) and run per test case. A language is
// offered when its toolchain is installed under a path every sandbox uid can read (/usr, or what `binds` adds).
// `rlpipe sandbox setup` installs the ones Debian packages (TOOLCHAIN_PACKAGES).
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { type CallDriver, KOTLIN_CALL_DRIVER, scalaCallDriver, verilogCallDriver } from "./call-drivers.js";

export type { CallDriver };
import { eraseNullableAnnotations } from "./csharp-nullable.js";
import { cppSourceDriver, goTestSourceDriver, javaSourceDriver, jsSourceDriver, rustSourceDriver, type SourceCallSpec } from "./source-call-drivers.js";

export type { SourceCallSpec };

/**
 * Least compile budgets (Toolchain.minCompileTimeoutMs): compilers of native code, javac, the slow native compilers
 * (ldc, Mono's mcs, swiftc) and the JVM-based ones (scalac, kotlinc), each with a wide margin over what a loaded
 * 2-core machine takes.
 */
export const COMPILE_FLOOR_MS = { native: 30_000, javac: 45_000, slow: 60_000, jvm: 120_000 } as const;

export interface Toolchain {
  readonly language: string;
  /** The source file's name in /work/src (Java needs Main.java). */
  readonly file: string;
  /** Build step, run once per program in /work/src (absolute paths). */
  readonly compile?: readonly string[];
  /** Run step per test case, in the case's own directory; `{mem}` is the memory limit in MB. */
  readonly run: readonly string[];
  /** Variables added to the sandbox's few (PATH, HOME, TMPDIR, LANG). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The address-space limit instead of the memory limit, for runtimes that reserve far more than they use (V8, the
   * JVM, Go); their heap is bounded by their own flag (`{mem}`) instead.
   */
  readonly addressSpaceBytes?: number;
  /** The process limit for the compiler and the program (threads count: the JVM and Go start many). */
  readonly maxProcesses?: number;
  /**
   * The least compile budget a build gets, whatever the request asked (SandboxFusion's default is 10 s): a JVM-based
   * compiler takes 5-10 s on a quiet machine and several times that on a loaded one, and a build cut short is a
   * wrong verdict on a right program. The time a build took and its budget are in the reply.
   */
  readonly minCompileTimeoutMs?: number;
  /** Host paths bound read-only into the sandbox, when they exist (configuration a toolchain reads outside /usr). */
  readonly binds?: readonly string[];
  /** Files of the toolchain's own written beside the program in /work/src before the build (Kotlin's launcher). */
  readonly files?: Readonly<Record<string, string>>;
  /**
   * What a program needs before it is built, read from its text (Node side): a header it may omit (Racket's #lang),
   * the run step naming its entry point (Scala's object).
   */
  readonly forProgram?: (code: string) => { readonly code?: string; readonly run?: readonly string[] };
  /**
   * Function-call cases: code added to the program that reads `.rlpipe-call.json` ({fn, args}) from the case's
   * directory, calls the function and writes its value as JSON on descriptor 3 (the harness compares it; the
   * expected value never enters the sandbox). In the program's own file (`file` absent) or a file of its own.
   */
  readonly callDriver?: (fnNames: readonly string[], code: string) => CallDriver;
  /**
   * Asserts taken apart (core/grading/tail-asserts.ts): code that makes the program's own call `k` (its arguments the
   * test's source text) and writes the value as JSON on descriptor 3, as callDriver does.
   */
  readonly sourceCallDriver?: (calls: readonly SourceCallSpec[], code: string) => CallDriver;
}


/** JavaScript: the function (or a method of `class Solution`) by name, through eval in the module's scope. */
const JS_CALL_DRIVER = `
;(function rlpipeCall() {
  const fs = require("fs");
  let call;
  try { call = JSON.parse(fs.readFileSync(".rlpipe-call.json", "utf8")); } catch (e) { return; }
  let fn;
  try { fn = eval(call.fn); } catch (e) { fn = undefined; }
  if (typeof fn !== "function") {
    let cls;
    try { cls = eval("Solution"); } catch (e) { cls = undefined; }
    if (typeof cls === "function" && typeof cls.prototype[call.fn] === "function") { const s = new cls(); fn = s[call.fn].bind(s); }
  }
  if (typeof fn !== "function") throw new ReferenceError(call.fn + " is not defined");
  const write = (v) => fs.writeSync(3, JSON.stringify(v === undefined ? null : v));
  const out = fn(...call.args);
  if (out !== null && typeof out === "object" && typeof out.then === "function") out.then(write); else write(out);
})();
`;

/**
 * PHP: the function (or a method of `class Solution`) by name. `?><?php` first: the program may have left PHP mode
 * (whatever that prints goes to stdout, which a function call does not grade).
 */
const PHP_CALL_DRIVER = `
?><?php
(function () {
  $call = json_decode(file_get_contents('.rlpipe-call.json'), true);
  $fn = $call['fn'];
  if (function_exists($fn)) $res = call_user_func_array($fn, $call['args']);
  elseif (class_exists('Solution') && method_exists('Solution', $fn)) $res = call_user_func_array([new Solution(), $fn], $call['args']);
  else throw new Error("function $fn is not defined");
  file_put_contents('php://fd/3', json_encode($res));
})();
`;

/** Ruby: a top-level method (private on Object) or a method of `class Solution`, by name. */
const RUBY_CALL_DRIVER = `
require 'json'
__rlpipe_call = JSON.parse(File.read('.rlpipe-call.json'))
__rlpipe_fn = __rlpipe_call['fn']
__rlpipe_res =
  if respond_to?(__rlpipe_fn, true) then send(__rlpipe_fn, *__rlpipe_call['args'])
  elsif defined?(Solution) && Solution.method_defined?(__rlpipe_fn) then Solution.new.send(__rlpipe_fn, *__rlpipe_call['args'])
  else raise NameError, "function #{__rlpipe_fn} is not defined"
  end
IO.new(3, 'w').write(JSON.generate(__rlpipe_res))
`;

/** Perl: a sub of package main (or a method of package Solution) by name; JSON::PP is in Perl's core. */
const PERL_CALL_DRIVER = String.raw`
{
  no strict 'refs';
  require JSON::PP;
  open(my $rlpipe_in, '<', '.rlpipe-call.json') or die "no call: $!";
  my $rlpipe_call = do { local $/; JSON::PP->new->decode(<$rlpipe_in>) };
  my $rlpipe_fn = $rlpipe_call->{fn};
  my $rlpipe_res;
  if (defined &{"main::$rlpipe_fn"}) { $rlpipe_res = &{"main::$rlpipe_fn"}(@{$rlpipe_call->{args}}); }
  elsif (Solution->can($rlpipe_fn)) { my $s = Solution->can('new') ? Solution->new : bless({}, 'Solution'); $rlpipe_res = $s->$rlpipe_fn(@{$rlpipe_call->{args}}); }
  else { die "function $rlpipe_fn is not defined\n"; }
  open(my $rlpipe_out, '>&=', 3) or die "descriptor 3: $!";
  print $rlpipe_out JSON::PP->new->allow_nonref->canonical->encode($rlpipe_res);
  close($rlpipe_out);
}
`;

/** Lua: a global function by name, with a small JSON reader and writer (Lua has none). */
const LUA_CALL_DRIVER = String.raw`
do
  local function decode(s)
    local i = 1
    local function ws() i = s:find('[^ \t\r\n]', i) or #s + 1 end
    local function str()
      local out, j = {}, i + 1
      local map = { b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' }
      while true do
        local c = s:sub(j, j)
        if c == '"' then i = j + 1; return table.concat(out) end
        if c == '\\' then
          local e = s:sub(j + 1, j + 1)
          if e == 'u' then out[#out + 1] = utf8.char(tonumber(s:sub(j + 2, j + 5), 16)); j = j + 6
          else out[#out + 1] = map[e] or e; j = j + 2 end
        else out[#out + 1] = c; j = j + 1 end
      end
    end
    local value
    value = function()
      ws()
      local c = s:sub(i, i)
      if c == '{' then
        local t = {}; i = i + 1; ws()
        if s:sub(i, i) == '}' then i = i + 1; return t end
        while true do
          ws(); local k = str(); ws(); i = i + 1; t[k] = value(); ws()
          local d = s:sub(i, i); i = i + 1
          if d == '}' then return t end
        end
      elseif c == '[' then
        local t = {}; i = i + 1; ws()
        if s:sub(i, i) == ']' then i = i + 1; return t end
        while true do
          t[#t + 1] = value(); ws()
          local d = s:sub(i, i); i = i + 1
          if d == ']' then return t end
        end
      elseif c == '"' then return str()
      elseif s:sub(i, i + 3) == 'true' then i = i + 4; return true
      elseif s:sub(i, i + 4) == 'false' then i = i + 5; return false
      elseif s:sub(i, i + 3) == 'null' then i = i + 4; return nil
      else
        local num = s:match('^-?[%d.eE+-]+', i); i = i + #num
        return math.tointeger(tonumber(num)) or tonumber(num)
      end
    end
    return value()
  end
  local function encode(v)
    local t = type(v)
    if t == 'nil' then return 'null'
    elseif t == 'boolean' then return tostring(v)
    elseif t == 'number' then
      if v ~= v or v == math.huge or v == -math.huge then return 'null' end
      return math.type(v) == 'integer' and tostring(v) or string.format('%.17g', v)
    elseif t == 'string' then
      return '"' .. v:gsub('[%c"\\]', function(c) return string.format('\\u%04x', c:byte()) end) .. '"'
    elseif t == 'table' then
      local out = {}
      if #v > 0 or next(v) == nil then
        for _, x in ipairs(v) do out[#out + 1] = encode(x) end
        return '[' .. table.concat(out, ',') .. ']'
      end
      for k, x in pairs(v) do out[#out + 1] = encode(tostring(k)) .. ':' .. encode(x) end
      table.sort(out)
      return '{' .. table.concat(out, ',') .. '}'
    end
    error('cannot return a ' .. t .. ' as JSON')
  end
  local f = assert(io.open('.rlpipe-call.json')); local call = decode(f:read('a')); f:close()
  local fn = _G[call.fn]
  if type(fn) ~= 'function' then error('function ' .. call.fn .. ' is not defined') end
  local res = fn(table.unpack(call.args))
  local out = assert(io.open('/dev/fd/3', 'w')); out:write(encode(res)); out:close()
end
`;

/**
 * bash: the function by name with the arguments as words (a string as is, anything else as JSON); its value is what
 * it prints, a number when it reads as one. bash reads no JSON: the sandbox's python3 decodes and encodes.
 */
const BASH_CALL_DRIVER = String.raw`
__rlpipe_fn=$(/usr/bin/python3 -c 'import json; print(json.load(open(".rlpipe-call.json"))["fn"])')
set --
while IFS= read -r -d '' __rlpipe_arg; do set -- "$@" "$__rlpipe_arg"; done < <(/usr/bin/python3 -c 'import json, sys
for a in json.load(open(".rlpipe-call.json"))["args"]: sys.stdout.write((a if isinstance(a, str) else json.dumps(a)) + "\0")')
__rlpipe_res=$("$__rlpipe_fn" "$@") || exit $?
/usr/bin/python3 -c 'import json, re, sys
v = sys.argv[1]
sys.stdout.write(v if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", v) else json.dumps(v))' "$__rlpipe_res" >&3
`;

/**
 * C++: the functions are known when the program is built, so each is called through a template that reads every
 * parameter's type from the function's own signature (int, long, double, bool, char, string, vectors of these, nested)
 * and writes the value back as JSON. A program with class Solution gets its methods called on a fresh instance.
 */
export const CPP_CALL_DRIVER = String.raw`
// ---- rlpipe function-call driver (C++): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
#include <cstdio>
#include <deque>
#include <fstream>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>
namespace rlpipe_call {
struct Json {
  enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
  bool b = false; double n = 0; long long i = 0; bool isInt = false; std::string s;
  std::vector<Json> a; std::vector<std::pair<std::string, Json>> o;
};
struct Parser {
  const std::string& t; size_t p = 0;
  void ws() { while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\r' || t[p] == '\t')) p++; }
  std::string str() {
    std::string out; p++;
    while (p < t.size() && t[p] != '"') {
      char c = t[p++];
      if (c != '\\') { out += c; continue; }
      char e = t[p++];
      if (e == 'n') out += '\n'; else if (e == 't') out += '\t'; else if (e == 'r') out += '\r'; else if (e == 'b') out += '\b'; else if (e == 'f') out += '\f';
      else if (e == 'u') {
        unsigned cp = std::stoul(t.substr(p, 4), nullptr, 16); p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && t.compare(p, 2, "\\u") == 0) { unsigned lo = std::stoul(t.substr(p + 2, 4), nullptr, 16); p += 6; cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00); }
        if (cp < 0x80) out += char(cp);
        else if (cp < 0x800) { out += char(0xC0 | (cp >> 6)); out += char(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) { out += char(0xE0 | (cp >> 12)); out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F)); }
        else { out += char(0xF0 | (cp >> 18)); out += char(0x80 | ((cp >> 12) & 0x3F)); out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F)); }
      } else out += e;
    }
    p++;
    return out;
  }
  Json value() {
    ws(); Json v;
    char c = t[p];
    if (c == '{') { v.kind = Json::Obj; p++; ws(); if (t[p] == '}') { p++; return v; }
      for (;;) { ws(); std::string k = str(); ws(); p++; Json x = value(); v.o.emplace_back(k, x); ws(); if (t[p++] == '}') return v; } }
    if (c == '[') { v.kind = Json::Arr; p++; ws(); if (t[p] == ']') { p++; return v; }
      for (;;) { v.a.push_back(value()); ws(); if (t[p++] == ']') return v; } }
    if (c == '"') { v.kind = Json::Str; v.s = str(); return v; }
    if (t.compare(p, 4, "true") == 0) { p += 4; v.kind = Json::Bool; v.b = true; return v; }
    if (t.compare(p, 5, "false") == 0) { p += 5; v.kind = Json::Bool; return v; }
    if (t.compare(p, 4, "null") == 0) { p += 4; return v; }
    size_t end = p; while (end < t.size() && std::string("+-0123456789.eE").find(t[end]) != std::string::npos) end++;
    std::string num = t.substr(p, end - p); p = end;
    v.kind = Json::Num; v.n = std::stod(num);
    v.isInt = num.find_first_of(".eE") == std::string::npos; if (v.isInt) v.i = std::stoll(num);
    return v;
  }
};
template <typename T> struct is_vector : std::false_type {};
template <typename T, typename A> struct is_vector<std::vector<T, A>> : std::true_type {};
// What else a value may be written from (not read into): sequences, tuples and pairs (as arrays), optionals, maps.
template <typename T> struct is_seq : is_vector<T> {};
template <typename T, typename... R> struct is_seq<std::set<T, R...>> : std::true_type {};
template <typename T, typename... R> struct is_seq<std::deque<T, R...>> : std::true_type {};
template <typename T, typename... R> struct is_seq<std::list<T, R...>> : std::true_type {};
template <typename T> struct is_tuple : std::false_type {};
template <typename... A> struct is_tuple<std::tuple<A...>> : std::true_type {};
template <typename A, typename B> struct is_tuple<std::pair<A, B>> : std::true_type {};
template <typename T> struct is_optional : std::false_type {};
template <typename T> struct is_optional<std::optional<T>> : std::true_type {};
template <typename T> struct is_map : std::false_type {};
template <typename K, typename V, typename... R> struct is_map<std::map<K, V, R...>> : std::true_type {};
template <typename K, typename V, typename... R> struct is_map<std::unordered_map<K, V, R...>> : std::true_type {};
template <typename T> T from(const Json& j) {
  if constexpr (std::is_same_v<T, bool>) return j.kind == Json::Bool ? j.b : j.n != 0;
  else if constexpr (std::is_same_v<T, char>) return j.s.empty() ? char(j.i) : j.s[0];
  else if constexpr (std::is_integral_v<T>) return j.isInt ? T(j.i) : T(j.n);
  else if constexpr (std::is_floating_point_v<T>) return T(j.n);
  else if constexpr (std::is_same_v<T, std::string>) return j.s;
  else if constexpr (is_vector<T>::value) { T out; for (const Json& x : j.a) out.push_back(from<typename T::value_type>(x)); return out; }
  else static_assert(sizeof(T) == 0, "rlpipe: this parameter type cannot be read from JSON");
}
inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += char(c); }
    else if (c < 0x20) { char buf[8]; std::snprintf(buf, sizeof buf, "\\u%04x", c); out += buf; }
    else out += char(c);
  }
  return out + "\"";
}
template <typename T> std::string to(const T& v);
template <typename K> std::string key(const K& k) {
  if constexpr (std::is_convertible_v<K, std::string>) return quote(std::string(k));
  else if constexpr (std::is_same_v<K, char>) return quote(std::string(1, k));
  else if constexpr (std::is_same_v<K, bool>) return k ? "\"true\"" : "\"false\"";
  else return quote(std::to_string(k));
}
template <typename T> std::string to(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, char>) return quote(std::string(1, v));
  else if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else if constexpr (std::is_floating_point_v<T>) { if (!(v == v) || v - v != 0) return "null"; char buf[40]; std::snprintf(buf, sizeof buf, "%.17g", double(v)); return buf; }
  else if constexpr (std::is_convertible_v<T, std::string>) return quote(std::string(v));
  else if constexpr (is_optional<T>::value) return v.has_value() ? to(*v) : std::string("null");
  else if constexpr (is_tuple<T>::value) { std::string out = "["; bool first = true; std::apply([&](const auto&... x) { ((out += (first ? "" : ","), first = false, out += to(x)), ...); }, v); return out + "]"; }
  else if constexpr (is_map<T>::value) { std::string out = "{"; bool first = true; for (const auto& [k, x] : v) { if (!first) out += ","; first = false; out += key(k) + ":" + to(x); } return out + "}"; }
  else if constexpr (is_seq<T>::value) { std::string out = "["; bool first = true; for (const auto& x : v) { if (!first) out += ","; first = false; out += to(x); } return out + "]"; }
  else static_assert(sizeof(T) == 0, "rlpipe: this return type cannot be written as JSON");
}
template <typename... A> struct Args {
  template <typename F, size_t... I> static std::string apply(F&& f, const std::vector<Json>& args, std::index_sequence<I...>) {
    if (args.size() != sizeof...(A)) throw std::runtime_error("wrong number of arguments");
    std::tuple<std::decay_t<A>...> vals{from<std::decay_t<A>>(args[I])...};
    using R = decltype(f(std::get<I>(vals)...));
    if constexpr (std::is_void_v<R>) { f(std::get<I>(vals)...); return "null"; }
    else return to(f(std::get<I>(vals)...));
  }
};
template <typename R, typename... A> std::string call(R (*fn)(A...), const std::vector<Json>& args) {
  return Args<A...>::apply(fn, args, std::index_sequence_for<A...>{});
}
template <typename C, typename R, typename... A> std::string call(R (C::*fn)(A...), const std::vector<Json>& args) {
  auto self = std::make_shared<C>();
  return Args<A...>::apply([&](auto&... x) { return ((*self).*fn)(x...); }, args, std::index_sequence_for<A...>{});
}
template <typename C, typename R, typename... A> std::string call(R (C::*fn)(A...) const, const std::vector<Json>& args) {
  auto self = std::make_shared<C>();
  return Args<A...>::apply([&](auto&... x) { return ((*self).*fn)(x...); }, args, std::index_sequence_for<A...>{});
}
inline void write(const std::string& out) { FILE* f = fdopen(3, "w"); std::fputs(out.c_str(), f); std::fclose(f); }
}  // namespace rlpipe_call
int main() {
  std::ifstream in(".rlpipe-call.json"); std::stringstream buf; buf << in.rdbuf(); std::string text = buf.str();
  rlpipe_call::Parser parser{text};
  rlpipe_call::Json call = parser.value();
  std::string fn; std::vector<rlpipe_call::Json> args; long long source = -1;
  for (auto& [k, v] : call.o) { if (k == "fn") fn = v.s; else if (k == "args") args = v.a; else if (k == "source") source = v.i; }
  (void)source;
  std::string out;
__DISPATCH__
  else throw std::runtime_error("function " + fn + " is not defined");
  rlpipe_call::write(out);
  return 0;
}
`;

function cppCallDriver(fnNames: readonly string[], code: string): CallDriver {
  const solution = /\b(?:class|struct)\s+Solution\b/.test(code);
  const dispatch = fnNames.filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n))
    .map((n, i) => `  ${i === 0 ? "if" : "else if"} (fn == ${JSON.stringify(n)}) out = rlpipe_call::call(&${solution ? "Solution::" : ""}${n}, args);`).join("\n");
  // A bare function (LeetCode style) assumes the standard headers and namespace.
  const bare = !/^\s*#\s*include\b/m.test(code);
  return { text: CPP_CALL_DRIVER.replace("__DISPATCH__", dispatch === "" ? "  if (false) {}" : dispatch), ...(bare ? { prefix: "#include <bits/stdc++.h>\nusing namespace std;\n" } : {}) };
}

/**
 * Java: found by reflection in class Solution or Main (static or on a fresh instance), each argument converted to its
 * parameter's generic type (primitives and boxes, String, char, arrays, List, Set, Map, nested) and the value written as
 * JSON. Bare methods (no class, ScaleBox style) are wrapped in class Main with java.util imported; the driver's own
 * class is the entry point, so a program's main is never called.
 */
export const JAVA_CALL_DRIVER = String.raw`
// ---- rlpipe function-call driver (Java): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
class RlpipeCall {
  private final String t; private int p;
  private RlpipeCall(String t) { this.t = t; }
  private void ws() { while (p < t.length() && Character.isWhitespace(t.charAt(p))) p++; }
  private String str() {
    StringBuilder out = new StringBuilder(); p++;
    while (t.charAt(p) != '"') {
      char c = t.charAt(p++);
      if (c != '\\') { out.append(c); continue; }
      char e = t.charAt(p++);
      switch (e) {
        case 'n': out.append('\n'); break; case 't': out.append('\t'); break; case 'r': out.append('\r'); break;
        case 'b': out.append('\b'); break; case 'f': out.append('\f'); break;
        case 'u': out.append((char) Integer.parseInt(t.substring(p, p + 4), 16)); p += 4; break;
        default: out.append(e);
      }
    }
    p++;
    return out.toString();
  }
  private Object value() {
    ws();
    char c = t.charAt(p);
    if (c == '{') {
      java.util.Map<String, Object> m = new java.util.LinkedHashMap<>(); p++; ws();
      if (t.charAt(p) == '}') { p++; return m; }
      for (;;) { ws(); String k = str(); ws(); p++; m.put(k, value()); ws(); if (t.charAt(p++) == '}') return m; }
    }
    if (c == '[') {
      java.util.List<Object> l = new java.util.ArrayList<>(); p++; ws();
      if (t.charAt(p) == ']') { p++; return l; }
      for (;;) { l.add(value()); ws(); if (t.charAt(p++) == ']') return l; }
    }
    if (c == '"') return str();
    if (t.startsWith("true", p)) { p += 4; return Boolean.TRUE; }
    if (t.startsWith("false", p)) { p += 5; return Boolean.FALSE; }
    if (t.startsWith("null", p)) { p += 4; return null; }
    int end = p; while (end < t.length() && "+-0123456789.eE".indexOf(t.charAt(end)) >= 0) end++;
    String num = t.substring(p, end); p = end;
    if (num.matches("-?\\d+")) { try { return Long.parseLong(num); } catch (NumberFormatException e) { return new java.math.BigInteger(num); } }
    return Double.parseDouble(num);
  }
  /** A JSON value as a parameter of this (generic) type. */
  private static Object as(Object v, java.lang.reflect.Type type) {
    Class<?> raw = type instanceof Class ? (Class<?>) type : type instanceof java.lang.reflect.ParameterizedType ? (Class<?>) ((java.lang.reflect.ParameterizedType) type).getRawType() : Object.class;
    if (v == null) return null;
    if (raw == int.class || raw == Integer.class) return ((Number) v).intValue();
    if (raw == long.class || raw == Long.class) return ((Number) v).longValue();
    if (raw == double.class || raw == Double.class) return ((Number) v).doubleValue();
    if (raw == float.class || raw == Float.class) return ((Number) v).floatValue();
    if (raw == short.class || raw == Short.class) return ((Number) v).shortValue();
    if (raw == byte.class || raw == Byte.class) return ((Number) v).byteValue();
    if (raw == boolean.class || raw == Boolean.class) return v;
    if (raw == char.class || raw == Character.class) return v instanceof String ? ((String) v).charAt(0) : (char) ((Number) v).intValue();
    if (raw == String.class) return v.toString();
    if (raw.isArray()) {
      java.util.List<?> l = (java.util.List<?>) v;
      Object arr = java.lang.reflect.Array.newInstance(raw.getComponentType(), l.size());
      for (int i = 0; i < l.size(); i++) java.lang.reflect.Array.set(arr, i, as(l.get(i), raw.getComponentType()));
      return arr;
    }
    java.lang.reflect.Type arg = type instanceof java.lang.reflect.ParameterizedType ? ((java.lang.reflect.ParameterizedType) type).getActualTypeArguments()[0] : Object.class;
    if (java.util.Set.class.isAssignableFrom(raw)) { java.util.Set<Object> s = new java.util.LinkedHashSet<>(); for (Object x : (java.util.List<?>) v) s.add(as(x, arg)); return s; }
    if (java.util.Collection.class.isAssignableFrom(raw)) { java.util.List<Object> l = new java.util.ArrayList<>(); for (Object x : (java.util.List<?>) v) l.add(as(x, arg)); return l; }
    if (java.util.Map.class.isAssignableFrom(raw)) {
      java.lang.reflect.Type val = ((java.lang.reflect.ParameterizedType) type).getActualTypeArguments()[1];
      java.util.Map<Object, Object> m = new java.util.LinkedHashMap<>();
      for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) m.put(e.getKey(), as(e.getValue(), val));
      return m;
    }
    return v;
  }
  private static String quote(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }
  static String json(Object v) {
    if (v == null) return "null";
    if (v instanceof String || v instanceof Character) return quote(v.toString());
    if (v instanceof Double || v instanceof Float) { double d = ((Number) v).doubleValue(); return Double.isFinite(d) ? (d == Math.rint(d) && Math.abs(d) < 1e15 ? String.valueOf((long) d) + ".0" : String.valueOf(d)) : "null"; }
    if (v instanceof Number || v instanceof Boolean) return v.toString();
    StringBuilder out = new StringBuilder();
    if (v.getClass().isArray()) {
      out.append('[');
      for (int i = 0; i < java.lang.reflect.Array.getLength(v); i++) { if (i > 0) out.append(','); out.append(json(java.lang.reflect.Array.get(v, i))); }
      return out.append(']').toString();
    }
    if (v instanceof java.util.Collection) {
      out.append('['); boolean first = true;
      for (Object x : (java.util.Collection<?>) v) { if (!first) out.append(','); first = false; out.append(json(x)); }
      return out.append(']').toString();
    }
    if (v instanceof java.util.Map) {
      out.append('{'); boolean first = true;
      for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) { if (!first) out.append(','); first = false; out.append(quote(String.valueOf(e.getKey()))).append(':').append(json(e.getValue())); }
      return out.append('}').toString();
    }
    if (v instanceof java.util.Optional) { java.util.Optional<?> o = (java.util.Optional<?>) v; return o.isPresent() ? json(o.get()) : "null"; }
    // javatuples' Pair, Triplet…: Iterable over their values.
    if (v instanceof Iterable) {
      out.append('['); boolean first = true;
      for (Object x : (Iterable<?>) v) { if (!first) out.append(','); first = false; out.append(json(x)); }
      return out.append(']').toString();
    }
    return quote(v.toString());
  }
  public static void main(String[] argv) throws Throwable {
    String text = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(".rlpipe-call.json")), java.nio.charset.StandardCharsets.UTF_8);
    @SuppressWarnings("unchecked") java.util.Map<String, Object> call = (java.util.Map<String, Object>) new RlpipeCall(text).value();
    String fn = (String) call.get("fn");
    java.util.List<?> args = (java.util.List<?>) call.get("args");
    for (String name : new String[] {"Solution", "Main"}) {
      Class<?> cls;
      try { cls = Class.forName(name); } catch (ClassNotFoundException e) { continue; }
      for (java.lang.reflect.Method m : cls.getDeclaredMethods()) {
        if (!m.getName().equals(fn) || m.getParameterCount() != args.size()) continue;
        java.lang.reflect.Type[] types = m.getGenericParameterTypes();
        Object[] values = new Object[args.size()];
        for (int i = 0; i < values.length; i++) values[i] = as(args.get(i), types[i]);
        m.setAccessible(true);
        Object self = null;
        if (!java.lang.reflect.Modifier.isStatic(m.getModifiers())) {
          java.lang.reflect.Constructor<?> ctor = cls.getDeclaredConstructor();
          ctor.setAccessible(true);
          self = ctor.newInstance();
        }
        Object res;
        try { res = m.invoke(self, values); } catch (java.lang.reflect.InvocationTargetException e) { throw e.getCause(); }
        try (java.io.FileOutputStream out = new java.io.FileOutputStream("/dev/fd/3")) {
          out.write((m.getReturnType() == void.class ? "null" : json(res)).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        return;
      }
    }
    throw new NoSuchMethodError("function " + fn + " is not defined");
  }
}
`;

function javaCallDriver(run: readonly string[]): (fnNames: readonly string[], code: string) => CallDriver {
  return (_fnNames, code) => {
    const bare = !/\b(?:class|interface|enum|record)\s+[A-Za-z_]/.test(code);
    let program: string | undefined;
    if (bare) {
      const lines = code.split("\n");
      const imports = lines.filter((l) => /^\s*import\s/.test(l));
      const body = lines.filter((l) => !/^\s*import\s/.test(l));
      program = ["import java.util.*;", ...imports, "class Main {", ...body, "}"].join("\n");
    }
    return { text: JAVA_CALL_DRIVER, run: [...run.slice(0, -1), "RlpipeCall"], ...(program === undefined ? {} : { program }) };
  };
}

const JAVA_BINDS = ["/etc/java-17-openjdk", "/etc/java-21-openjdk"];
const JAVA_JVM_FLAGS = ["-Xmx{mem}m", "-Xss64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"];

/** Java from a JDK (its home), with libraries on the classpath (a runtime environment's jars, paths in the sandbox). */
export function javaToolchain(home: string, jars: readonly string[] = []): Toolchain {
  const cp = [SRC, ...jars].join(":");
  // -ea: assert statements are checked, as SandboxFusion runs Java.
  const run = [join(home, "bin", "java"), "-ea", ...JAVA_JVM_FLAGS, "-cp", cp, "Main"];
  return {
    language: "java", minCompileTimeoutMs: COMPILE_FLOOR_MS.javac, file: "Main.java", compile: [join(home, "bin", "javac"), "-encoding", "UTF-8", "-cp", cp, "-d", SRC, `${SRC}/Main.java`], run,
    addressSpaceBytes: BIG_ADDRESS_SPACE, maxProcesses: 256, binds: JAVA_BINDS, callDriver: javaCallDriver(run), sourceCallDriver: javaSourceDriver(JAVA_CALL_DRIVER),
  };
}

/** The JDK home of a Java toolchain (its javac's directory's parent). */
export function javaHome(java: Toolchain): string {
  return dirname(dirname(java.compile![0]!));
}

/**
 * SandboxFusion's junit: the program's classes (tests among them, JUnit 5) compiled with JUnit on the classpath, then
 * the JUnit console launcher scanning them. A public top-level type loses its `public`, so that Main.java holds it.
 */
export function junitToolchain(home: string, consoleJar: string, jars: readonly string[]): Toolchain {
  const cp = [SRC, consoleJar, ...jars].join(":");
  return {
    language: "junit", minCompileTimeoutMs: COMPILE_FLOOR_MS.javac, file: "Main.java", compile: [join(home, "bin", "javac"), "-encoding", "UTF-8", "-cp", cp, "-d", SRC, `${SRC}/Main.java`],
    run: [join(home, "bin", "java"), ...JAVA_JVM_FLAGS, "-jar", consoleJar, "--disable-banner", "--disable-ansi-colors", "--class-path", cp, "--scan-class-path"],
    addressSpaceBytes: BIG_ADDRESS_SPACE, maxProcesses: 256, binds: JAVA_BINDS,
    forProgram: (code) => ({ code: code.replace(/^(\s*)public\s+((?:final\s+|abstract\s+)*(?:class|interface|enum|record)\b)/gm, "$1$2") }),
  };
}

/** Go: the functions by name (known when the program is built), arguments decoded into their parameter types. */
function goCallDriver(fnNames: readonly string[]): CallDriver {
  const table = fnNames.filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n)).map((n) => `\t\t${JSON.stringify(n)}: ${n},`).join("\n");
  return {
    file: "rlpipe_call.go",
    prefix: "package main\n",
    text: `package main

import (
\t"encoding/json"
\t"fmt"
\t"os"
\t"reflect"
)

func main() {
\tdata, err := os.ReadFile(".rlpipe-call.json")
\tif err != nil {
\t\tpanic(err)
\t}
\tvar call struct {
\t\tFn   string            \`json:"fn"\`
\t\tArgs []json.RawMessage \`json:"args"\`
\t}
\tif err := json.Unmarshal(data, &call); err != nil {
\t\tpanic(err)
\t}
\tfns := map[string]interface{}{
${table}
\t}
\tf, ok := fns[call.Fn]
\tif !ok {
\t\tpanic(fmt.Sprintf("function %s is not defined", call.Fn))
\t}
\tfn := reflect.ValueOf(f)
\tif fn.Type().NumIn() != len(call.Args) {
\t\tpanic(fmt.Sprintf("%s takes %d arguments, the case gives %d", call.Fn, fn.Type().NumIn(), len(call.Args)))
\t}
\tin := make([]reflect.Value, len(call.Args))
\tfor i, raw := range call.Args {
\t\tv := reflect.New(fn.Type().In(i))
\t\tif err := json.Unmarshal(raw, v.Interface()); err != nil {
\t\t\tpanic(fmt.Sprintf("argument %d: %v", i, err))
\t\t}
\t\tin[i] = v.Elem()
\t}
\tout := fn.Call(in)
\tvar value interface{}
\tif len(out) > 0 {
\t\tvalue = out[0].Interface()
\t}
\ttext, err := json.Marshal(value)
\tif err != nil {
\t\tpanic(err)
\t}
\tos.NewFile(3, "value").Write(text)
}
`,
  };
}

const SRC = "/work/src";

/** How the sandbox builds Go (besides GOCACHE): what a prebuilt standard-library cache must be built with to be used. */
export const GO_BUILD_ENV: Readonly<Record<string, string>> = {
  GOPATH: "/tmp/.go", GO111MODULE: "off", GOTOOLCHAIN: "local", CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false", GOMAXPROCS: "2",
};

/**
 * SandboxFusion's go_test: the program is a test file of package main, built with `go test -c` in module mode against
 * the runtime environment's module (`module`: its go.mod and go.sum, testify among its requirements) and read-only
 * module cache (`modCache`), offline; run, it answers as `go test` does (ok, or the failures and FAIL).
 */
export function goTestToolchain(go: Toolchain, module: string, modCache: string): Toolchain {
  const bin = go.compile![0]!;
  return {
    ...go, language: "go_test", file: "main_test.go", callDriver: undefined, sourceCallDriver: goTestSourceDriver(`${SRC}/main.test`),
    compile: ["/bin/sh", "-c", `cp ${module}/go.mod ${module}/go.sum ${SRC}/ && exec "$0" test -c -o ${SRC}/main.test ${SRC}`, bin],
    run: ["/bin/sh", "-c", `${SRC}/main.test > /tmp/.go-test.out 2>&1; s=$?; if [ $s -eq 0 ]; then printf 'ok  \tcommand-line-arguments\n'; else cat /tmp/.go-test.out; printf 'FAIL\tcommand-line-arguments\n'; fi; exit $s`],
    env: { ...go.env, GO111MODULE: "on", GOFLAGS: "-mod=mod -buildvcs=false", GOPROXY: "off", GOSUMDB: "off", GOMODCACHE: modCache },
  };
}

/**
 * Go with a prebuilt standard-library build cache (a runtime environment's go-cache, at `cache` in the sandbox): each
 * program starts its private cache as symbolic links to it, so only the program's own packages are compiled (~0.2 s
 * instead of ~5-9 s). The prebuilt entries are read-only; what a program adds or replaces stays in its own /tmp.
 */
export function withGoCache(go: Toolchain, cache: string): Toolchain {
  const [bin, ...args] = go.compile!;
  return { ...go, compile: ["/bin/sh", "-c", `cp -rs ${cache}/. /tmp/.go-cache/ && exec "$0" "$@"`, bin!, ...args] };
}
const BIG_ADDRESS_SPACE = 16 * 2 ** 30;

function first(...paths: string[]): string | undefined {
  return paths.find((p) => existsSync(p));
}

/** The JDK with javac, Debian's first (its /etc configuration is bound as well). */
function jdk(): string | undefined {
  const root = "/usr/lib/jvm";
  let names: string[] = [];
  try { names = readdirSync(root).sort(); } catch { return undefined; }
  const ordered = [...names.filter((n) => /^java-\d+-openjdk/.test(n)), ...names.filter((n) => !/^java-\d+-openjdk/.test(n))];
  return ordered.map((n) => join(root, n)).find((d) => existsSync(join(d, "bin", "javac")));
}

/** Kotlin scripts: constructs the compiled script class `Main` (main.kts), and rethrows what its body threw. */
const KOTLIN_SCRIPT_LAUNCHER = `// rlpipe: runs the compiled script (its class's constructor is its body)
fun main(args: Array<String>) {
    try {
        Class.forName("Main").getConstructor(Array<String>::class.java).newInstance(args as Any)
    } catch (e: java.lang.reflect.InvocationTargetException) {
        throw e.cause ?: e
    }
}
`;

/**
 * Languages whose toolchains have a function-call driver, and those with a source-call driver (asserts taken apart),
 * when installed: the verdict table (docs/VERDICTS.md) is generated from these, and a test checks them against the
 * toolchains themselves. Python's are the harness's own.
 */
export const CALL_DRIVER_LANGUAGES = [
  "D_ut", "R", "bash", "cpp", "csharp", "go", "java", "julia", "kotlin_script", "lua", "nodejs", "perl", "php", "python", "racket", "ruby",
  "rust", "scala", "swift", "typescript", "verilog",
] as const;
export const SOURCE_CALL_LANGUAGES = ["cpp", "go_test", "java", "nodejs", "rust"] as const;

/** Every language whose toolchain is installed here, in a stable order. */
export function detectToolchains(): Toolchain[] {
  const out: Toolchain[] = [];
  const gxx = first("/usr/bin/g++");
  if (gxx !== undefined) out.push({ language: "cpp", minCompileTimeoutMs: COMPILE_FLOOR_MS.native, file: "main.cpp", compile: [gxx, "-O2", "-std=c++17", "-pipe", "-o", `${SRC}/main`, `${SRC}/main.cpp`], run: [`${SRC}/main`], callDriver: cppCallDriver, sourceCallDriver: cppSourceDriver(CPP_CALL_DRIVER) });
  const node = first("/usr/bin/node", "/usr/local/bin/node");
  if (node !== undefined && node.startsWith("/usr/")) out.push({ language: "nodejs", file: "main.js", run: [node, "--max-old-space-size={mem}", `${SRC}/main.js`], addressSpaceBytes: BIG_ADDRESS_SPACE, callDriver: () => ({ text: JS_CALL_DRIVER }), sourceCallDriver: jsSourceDriver });
  const go = first("/usr/local/go/bin/go", "/usr/lib/go/bin/go", "/usr/bin/go");
  if (go !== undefined) {
    out.push({
      // The package in /work/src: the program, and for function calls the driver's file beside it.
      language: "go", minCompileTimeoutMs: COMPILE_FLOOR_MS.native, file: "main.go", compile: [go, "build", "-o", `${SRC}/main`], run: [`${SRC}/main`], callDriver: goCallDriver,
      // A private build cache per program (GOCACHE in /tmp, emptied after it); GOPATH and modules off the network.
      env: { GOCACHE: "/tmp/.go-cache", ...GO_BUILD_ENV },
      addressSpaceBytes: BIG_ADDRESS_SPACE, maxProcesses: 256,
    });
  }
  const java = jdk();
  if (java !== undefined) out.push(javaToolchain(java));
  const rustc = first("/usr/bin/rustc");
  if (rustc !== undefined) out.push({ language: "rust", minCompileTimeoutMs: COMPILE_FLOOR_MS.native, file: "main.rs", compile: [rustc, "-O", "--edition", "2021", "-o", `${SRC}/main`, `${SRC}/main.rs`], run: [`${SRC}/main`], maxProcesses: 64, callDriver: rustCallDriver, sourceCallDriver: rustSourceDriver(RUST_CALL_DRIVER) });
  const bash = first("/usr/bin/bash", "/bin/bash");
  if (bash !== undefined) out.push({ language: "bash", file: "main.sh", run: ["/usr/bin/bash", `${SRC}/main.sh`], callDriver: () => ({ text: BASH_CALL_DRIVER }) });
  const perl = first("/usr/bin/perl");
  if (perl !== undefined) out.push({ language: "perl", file: "main.pl", run: [perl, `${SRC}/main.pl`], callDriver: () => ({ text: PERL_CALL_DRIVER }) });
  const php = first("/usr/bin/php");
  if (php !== undefined) out.push({ language: "php", file: "main.php", run: [php, "-d", "memory_limit=-1", `${SRC}/main.php`], binds: ["/etc/php"], callDriver: () => ({ text: PHP_CALL_DRIVER, prefix: "<?php\n" }) });
  const ruby = first("/usr/bin/ruby");
  if (ruby !== undefined) out.push({ language: "ruby", file: "main.rb", run: [ruby, `${SRC}/main.rb`], callDriver: () => ({ text: RUBY_CALL_DRIVER }) });
  const lua = first("/usr/bin/lua5.4", "/usr/bin/lua5.3", "/usr/bin/lua");
  if (lua !== undefined) out.push({ language: "lua", file: "main.lua", run: [lua, `${SRC}/main.lua`], callDriver: () => ({ text: LUA_CALL_DRIVER }) });
  const ldmd2 = first("/usr/bin/ldmd2");
  if (ldmd2 !== undefined) {
    // SandboxFusion's D_ut: dmd with -unittest (unittest blocks run before main); ldmd2 is LDC's dmd-compatible driver.
    out.push({ language: "D_ut", minCompileTimeoutMs: COMPILE_FLOOR_MS.slow, file: "main.d", compile: [ldmd2, "-unittest", "-O", `-of=${SRC}/main`, `${SRC}/main.d`], run: [`${SRC}/main`], maxProcesses: 64, binds: ["/etc/ldc2.conf"], callDriver: dCallDriver });
  }
  const iverilog = first("/usr/bin/iverilog");
  const vvp = first("/usr/bin/vvp");
  if (iverilog !== undefined && vvp !== undefined) {
    // SandboxFusion's flags (after VerilogEval): SystemVerilog 2012, the test bench module tb at the top.
    out.push({
      language: "verilog", minCompileTimeoutMs: COMPILE_FLOOR_MS.native, file: "main.sv", compile: [iverilog, "-Wall", "-Winfloop", "-Wno-timescale", "-g2012", "-s", "tb", "-o", `${SRC}/test.vvp`, `${SRC}/main.sv`],
      run: [vvp, "-n", `${SRC}/test.vvp`], callDriver: verilogCallDriver,
    });
  }
  const racket = first("/usr/bin/racket");
  if (racket !== undefined) {
    // A program without a #lang line is Racket's own language (racket refuses a file that declares no module).
    // /etc/racket/config.rktd says where Debian keeps the compiled collections (without it racket compiles them anew).
    out.push({ language: "racket", file: "main.rkt", run: [racket, `${SRC}/main.rkt`], addressSpaceBytes: BIG_ADDRESS_SPACE, binds: ["/etc/racket"], callDriver: () => ({ text: RACKET_CALL_DRIVER }), forProgram: (code) => (/^\s*#lang\b/m.test(code) ? {} : { code: `#lang racket\n${code}` }) });
  }
  const scalac = first("/usr/bin/scalac");
  const scala = first("/usr/bin/scala");
  if (scalac !== undefined && scala !== undefined && java !== undefined) {
    // As SandboxFusion: scalac, then scala running the program's object (the one with main, or that extends App).
    const scalaRun = [scala, "-J-Xmx{mem}m", "-J-Xss64m", "-J-XX:+UseSerialGC", "-cp", SRC];
    out.push({
      language: "scala", minCompileTimeoutMs: COMPILE_FLOOR_MS.jvm, file: "main.scala", compile: [scalac, "-d", SRC, `${SRC}/main.scala`], run: [...scalaRun, "Main"],
      addressSpaceBytes: BIG_ADDRESS_SPACE, maxProcesses: 256, binds: ["/etc/java-17-openjdk", "/etc/java-21-openjdk"], callDriver: scalaCallDriver(scalaRun),
      forProgram: (code) => {
        const entry = /\bobject\s+([A-Za-z_][A-Za-z0-9_]*)[^{]*\bextends\s+App\b/.exec(code) ?? /\bobject\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:extends[^{]*)?\{[\s\S]*?\bdef\s+main\s*\(/.exec(code);
        return entry === null ? {} : { run: [...scalaRun, entry[1]!] };
      },
    });
  }
  const kotlinc = first("/usr/bin/kotlinc");
  const kotlinJars = ["/usr/share/java/kotlin-stdlib.jar", "/usr/share/java/kotlin-script-runtime.jar"];
  if (kotlinc !== undefined && java !== undefined && kotlinJars.every((j) => existsSync(j))) {
    // SandboxFusion's kotlin_script: a .kts script. Compiled once per program (kotlinc compiles a script to a class
    // whose constructor is its body) with a launcher that constructs it, then each case runs on the JVM: seconds of
    // kotlinc per case saved. A program that does not compile fails in its run step, as with SandboxFusion's
    // `kotlinc -script` (functions/sandbox-api.ts: NO_COMPILE_STEP).
    out.push({
      language: "kotlin_script", minCompileTimeoutMs: COMPILE_FLOOR_MS.jvm, file: "main.kts", files: { "rlpipe_kts.kt": KOTLIN_SCRIPT_LAUNCHER },
      compile: [kotlinc, "-J-Xmx1g", "-nowarn", `${SRC}/main.kts`, `${SRC}/rlpipe_kts.kt`, "-d", SRC],
      run: [join(java, "bin", "java"), ...JAVA_JVM_FLAGS, "-cp", [SRC, ...kotlinJars].join(":"), "Rlpipe_ktsKt"],
      // Without the JVM's warning about the -noverify kotlinc always passes (on every program's stderr otherwise).
      env: { JAVA_HOME: java, JAVA_OPTS: "-Xms32M -XX:-PrintWarnings" }, addressSpaceBytes: BIG_ADDRESS_SPACE, maxProcesses: 256, binds: JAVA_BINDS,
      callDriver: () => ({ text: KOTLIN_CALL_DRIVER }),
    });
  }
  const mcs = first("/usr/bin/mcs");
  const mono = first("/usr/bin/mono");
  if (mcs !== undefined && mono !== undefined) {
    // C# on Mono (Debian has no .NET SDK): compiled once by mcs, run by mono; /etc/mono maps its native libraries.
    const csc = [mcs, "-optimize+", "-d:DEBUG", "-nowarn:105,436", "-out:main.exe", "main.cs"];
    out.push({ language: "csharp", minCompileTimeoutMs: COMPILE_FLOOR_MS.slow, file: "main.cs", compile: csc, run: [mono, `${SRC}/main.exe`], addressSpaceBytes: BIG_ADDRESS_SPACE, maxProcesses: 64, binds: ["/etc/mono"], forProgram: csharpProgram, callDriver: csharpCallDriver(csc) });
  }
  const rscript = first("/usr/bin/Rscript");
  if (rscript !== undefined) out.push({ language: "R", file: "main.R", run: [rscript, `${SRC}/main.R`], binds: ["/etc/R"], addressSpaceBytes: BIG_ADDRESS_SPACE, callDriver: () => ({ text: R_CALL_DRIVER }) });
  return out;
}

/**
 * pytest (SandboxFusion's `pytest` language: the program is a test module, pytest runs it) with the interpreter of a
 * Python environment that has pytest (python-env.ts); `python` is that interpreter's path inside the sandbox.
 */
export function pytestToolchain(python: string): Toolchain {
  return { language: "pytest", file: "test_main.py", run: [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", `${SRC}/test_main.py`] };
}

/**
 * TypeScript as SandboxFusion runs it: tsx (esbuild: types are stripped, not checked) under the nodejs toolchain's
 * Node, from a runtime environment's node_modules (`modules`, also where its programs find packages). tsx's loader
 * is imported into the program's own Node process (its CLI would run the program in a child, on other descriptors).
 */
export function typescriptToolchain(nodejs: Toolchain, tsxLoader: string, modules: string): Toolchain {
  return {
    language: "typescript", file: "main.ts", run: [nodejs.run[0]!, "--max-old-space-size={mem}", "--import", tsxLoader, `${SRC}/main.ts`],
    // tsx's WebAssembly lexer reserves ~10 GiB of address space (guard regions), beyond Node's own reservations.
    env: { NODE_PATH: modules }, addressSpaceBytes: 4 * BIG_ADDRESS_SPACE,
    // esbuild is a Go program with threads of its own.
    maxProcesses: 256, callDriver: () => ({ text: JS_CALL_DRIVER }),
  };
}

/**
 * SandboxFusion's jest: the program is a Jest test file (TypeScript or JavaScript, through babel-jest with
 * preset-env and preset-typescript, as its runtime/node's babel.config.js), run by Jest 29 from a runtime
 * environment's node_modules (`modules`). The configuration is given whole on the command line, so nothing of the
 * program's directory can change it; no watchman, no colours, one process (Jest's workers would be more processes
 * for one file).
 */
export function jestToolchain(nodejs: Toolchain, modules: string): Toolchain {
  const config = {
    rootDir: SRC, testMatch: [`${SRC}/main.test.ts`], modulePaths: [modules], watchman: false, cacheDirectory: "/tmp/.jest-cache",
    transform: { "\\.[jt]sx?$": [`${modules}/babel-jest`, { babelrc: false, configFile: false, presets: [[`${modules}/@babel/preset-env`, { targets: { node: "current" } }], `${modules}/@babel/preset-typescript`] }] },
  };
  return {
    language: "jest", file: "main.test.ts",
    run: [nodejs.run[0]!, "--max-old-space-size={mem}", `${modules}/jest/bin/jest.js`, "--ci", "--runInBand", "--config", JSON.stringify(config)],
    env: { NODE_PATH: modules, FORCE_COLOR: "0", NO_COLOR: "1" }, addressSpaceBytes: 4 * BIG_ADDRESS_SPACE, maxProcesses: 256,
  };
}

/**
 * Rust: the functions are known when the program is built; each is called through a trait implemented for every
 * function of up to six parameters that can be read from JSON (integers, floats, bool, char, String, Vec, Option, and
 * borrowed &str, &[T] and &Vec<T>, which live as long as the one-call process) and
 * a return value that can be written as JSON (those, &str, tuples of two), so the types come from its signature.
 * LeetCode-style `impl Solution` gets `struct Solution;` when it lacks one, and its associated functions are called.
 */
export const RUST_CALL_DRIVER = String.raw`
// ---- rlpipe function-call driver (Rust): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
#[allow(dead_code)]
mod rlpipe_call {
    pub enum Json { Null, Bool(bool), Num(f64, Option<i64>), Str(String), Arr(Vec<Json>), Obj(Vec<(String, Json)>) }
    pub struct Parser<'a> { t: &'a [u8], p: usize }
    impl<'a> Parser<'a> {
        pub fn new(t: &'a str) -> Self { Parser { t: t.as_bytes(), p: 0 } }
        fn ws(&mut self) { while self.p < self.t.len() && (self.t[self.p] as char).is_whitespace() { self.p += 1; } }
        fn string(&mut self) -> String {
            let mut out: Vec<u8> = Vec::new();
            self.p += 1;
            while self.t[self.p] != b'"' {
                let c = self.t[self.p]; self.p += 1;
                if c != b'\\' { out.push(c); continue; }
                let e = self.t[self.p]; self.p += 1;
                match e {
                    b'n' => out.push(b'\n'), b't' => out.push(b'\t'), b'r' => out.push(b'\r'), b'b' => out.push(8), b'f' => out.push(12),
                    b'u' => {
                        let hex = std::str::from_utf8(&self.t[self.p..self.p + 4]).unwrap();
                        let cp = u32::from_str_radix(hex, 16).unwrap(); self.p += 4;
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(char::from_u32(cp).unwrap_or('\u{fffd}').encode_utf8(&mut buf).as_bytes());
                    }
                    other => out.push(other),
                }
            }
            self.p += 1;
            String::from_utf8(out).unwrap()
        }
        pub fn value(&mut self) -> Json {
            self.ws();
            match self.t[self.p] {
                b'{' => {
                    self.p += 1; self.ws(); let mut o = Vec::new();
                    if self.t[self.p] == b'}' { self.p += 1; return Json::Obj(o); }
                    loop { self.ws(); let k = self.string(); self.ws(); self.p += 1; let v = self.value(); o.push((k, v)); self.ws(); let d = self.t[self.p]; self.p += 1; if d == b'}' { return Json::Obj(o); } }
                }
                b'[' => {
                    self.p += 1; self.ws(); let mut a = Vec::new();
                    if self.t[self.p] == b']' { self.p += 1; return Json::Arr(a); }
                    loop { a.push(self.value()); self.ws(); let d = self.t[self.p]; self.p += 1; if d == b']' { return Json::Arr(a); } }
                }
                b'"' => Json::Str(self.string()),
                b't' => { self.p += 4; Json::Bool(true) }
                b'f' => { self.p += 5; Json::Bool(false) }
                b'n' => { self.p += 4; Json::Null }
                _ => {
                    let start = self.p;
                    while self.p < self.t.len() && b"+-0123456789.eE".contains(&self.t[self.p]) { self.p += 1; }
                    let s = std::str::from_utf8(&self.t[start..self.p]).unwrap();
                    Json::Num(s.parse().unwrap(), s.parse().ok())
                }
            }
        }
    }
    pub trait FromJson: Sized { fn from_json(j: &Json) -> Self; }
    macro_rules! ints { ($($t:ty),*) => { $(impl FromJson for $t { fn from_json(j: &Json) -> Self { match j { Json::Num(f, i) => i.map(|i| i as $t).unwrap_or(*f as $t), Json::Bool(b) => *b as $t, _ => panic!("expected a number") } } })* } }
    ints!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
    impl FromJson for f64 { fn from_json(j: &Json) -> Self { match j { Json::Num(f, _) => *f, _ => panic!("expected a number") } } }
    impl FromJson for f32 { fn from_json(j: &Json) -> Self { f64::from_json(j) as f32 } }
    impl FromJson for bool { fn from_json(j: &Json) -> Self { match j { Json::Bool(b) => *b, Json::Num(f, _) => *f != 0.0, _ => panic!("expected a boolean") } } }
    impl FromJson for String { fn from_json(j: &Json) -> Self { match j { Json::Str(s) => s.clone(), _ => panic!("expected a string") } } }
    impl FromJson for char { fn from_json(j: &Json) -> Self { match j { Json::Str(s) => s.chars().next().unwrap_or('\0'), Json::Num(_, Some(i)) => char::from_u32(*i as u32).unwrap_or('\0'), _ => panic!("expected a character") } } }
    impl<T: FromJson> FromJson for Vec<T> { fn from_json(j: &Json) -> Self { match j { Json::Arr(a) => a.iter().map(T::from_json).collect(), _ => panic!("expected an array") } } }
    // Borrowed parameters (&str, &[T], &Vec<T>) get values that live as long as the process, which runs one call.
    impl FromJson for &'static str { fn from_json(j: &Json) -> Self { Box::leak(String::from_json(j).into_boxed_str()) } }
    impl<T: FromJson> FromJson for &'static [T] { fn from_json(j: &Json) -> Self { Box::leak(Vec::<T>::from_json(j).into_boxed_slice()) } }
    impl<T: FromJson> FromJson for &'static Vec<T> { fn from_json(j: &Json) -> Self { Box::leak(Box::new(Vec::<T>::from_json(j))) } }
    impl<T: FromJson> FromJson for Option<T> { fn from_json(j: &Json) -> Self { match j { Json::Null => None, other => Some(T::from_json(other)) } } }
    pub trait ToJson { fn to_json(&self) -> String; }
    macro_rules! plain { ($($t:ty),*) => { $(impl ToJson for $t { fn to_json(&self) -> String { self.to_string() } })* } }
    plain!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool);
    impl ToJson for f64 { fn to_json(&self) -> String { if self.is_finite() { format!("{:?}", self) } else { "null".into() } } }
    impl ToJson for f32 { fn to_json(&self) -> String { (*self as f64).to_json() } }
    fn quote(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c { '"' => out.push_str("\\\""), '\\' => out.push_str("\\\\"), c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)), c => out.push(c) }
        }
        out.push('"');
        out
    }
    impl ToJson for String { fn to_json(&self) -> String { quote(self) } }
    impl ToJson for char { fn to_json(&self) -> String { quote(&self.to_string()) } }
    impl ToJson for () { fn to_json(&self) -> String { "null".into() } }
    impl<T: ToJson> ToJson for Vec<T> { fn to_json(&self) -> String { format!("[{}]", self.iter().map(|x| x.to_json()).collect::<Vec<_>>().join(",")) } }
    impl<T: ToJson> ToJson for Option<T> { fn to_json(&self) -> String { match self { Some(v) => v.to_json(), None => "null".into() } } }
    impl<A: ToJson, B: ToJson> ToJson for (A, B) { fn to_json(&self) -> String { format!("[{},{}]", self.0.to_json(), self.1.to_json()) } }
    impl<A: ToJson, B: ToJson, C: ToJson> ToJson for (A, B, C) { fn to_json(&self) -> String { format!("[{},{},{}]", self.0.to_json(), self.1.to_json(), self.2.to_json()) } }
    impl<A: ToJson, B: ToJson, C: ToJson, D: ToJson> ToJson for (A, B, C, D) { fn to_json(&self) -> String { format!("[{},{},{},{}]", self.0.to_json(), self.1.to_json(), self.2.to_json(), self.3.to_json()) } }
    impl<T: ToJson + ?Sized> ToJson for &T { fn to_json(&self) -> String { (**self).to_json() } }
    impl<T: ToJson> ToJson for [T] { fn to_json(&self) -> String { format!("[{}]", self.iter().map(|x| x.to_json()).collect::<Vec<_>>().join(",")) } }
    impl ToJson for str { fn to_json(&self) -> String { quote(self) } }
    // Map keys are JSON strings (a number's decimal digits), as the expected values' keys are read.
    pub trait JsonKey { fn key(&self) -> String; }
    macro_rules! keys { ($($t:ty),*) => { $(impl JsonKey for $t { fn key(&self) -> String { quote(&self.to_string()) } })* } }
    keys!(String, &str, char, bool, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
    impl<K: JsonKey, V: ToJson> ToJson for std::collections::HashMap<K, V> { fn to_json(&self) -> String { format!("{{{}}}", self.iter().map(|(k, v)| format!("{}:{}", k.key(), v.to_json())).collect::<Vec<_>>().join(",")) } }
    impl<K: JsonKey, V: ToJson> ToJson for std::collections::BTreeMap<K, V> { fn to_json(&self) -> String { format!("{{{}}}", self.iter().map(|(k, v)| format!("{}:{}", k.key(), v.to_json())).collect::<Vec<_>>().join(",")) } }
    impl<T: ToJson> ToJson for std::collections::BTreeSet<T> { fn to_json(&self) -> String { format!("[{}]", self.iter().map(|x| x.to_json()).collect::<Vec<_>>().join(",")) } }
    pub trait Call<M> { fn call(&self, args: &[Json]) -> String; }
    macro_rules! calls { ($($a:ident),*) => {
        #[allow(non_snake_case, unused_mut, unused_variables)]
        impl<Func, Ret: ToJson, $($a: FromJson),*> Call<($($a,)*)> for Func where Func: Fn($($a),*) -> Ret {
            fn call(&self, args: &[Json]) -> String {
                let mut it = args.iter();
                (self)($(<$a as FromJson>::from_json(it.next().expect("too few arguments"))),*).to_json()
            }
        }
    } }
    calls!(); calls!(A1); calls!(A1, A2); calls!(A1, A2, A3); calls!(A1, A2, A3, A4); calls!(A1, A2, A3, A4, A5); calls!(A1, A2, A3, A4, A5, A6);
    pub fn invoke<M, F: Call<M>>(f: F, args: &[Json]) -> String { f.call(args) }
}
fn main() {
    use std::io::Write;
    let text = std::fs::read_to_string(".rlpipe-call.json").expect("the call");
    let call = rlpipe_call::Parser::new(&text).value();
    let (mut fname, mut args, mut source) = (String::new(), Vec::new(), -1i64);
    if let rlpipe_call::Json::Obj(o) = call {
        for (k, v) in o { match (k.as_str(), v) { ("fn", rlpipe_call::Json::Str(s)) => fname = s, ("args", rlpipe_call::Json::Arr(a)) => args = a, ("source", rlpipe_call::Json::Num(_, Some(i))) => source = i, _ => {} } }
    }
    let _ = (&fname, &args, source);
    let out: String = __DISPATCH__;
    let mut f = std::fs::OpenOptions::new().write(true).open("/dev/fd/3").expect("descriptor 3");
    f.write_all(out.as_bytes()).unwrap();
}
`;

function rustCallDriver(fnNames: readonly string[], code: string): CallDriver {
  const solution = /\bimpl\s+Solution\b/.test(code);
  const names = fnNames.filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
  const dispatch = [...names.map((n) => `if fname == ${JSON.stringify(n)} { rlpipe_call::invoke(${solution ? "Solution::" : ""}${n}, &args) } else `), `{ panic!("function {} is not defined", fname) }`].join("");
  return {
    text: RUST_CALL_DRIVER.replace("__DISPATCH__", dispatch),
    ...(solution && !/\bstruct\s+Solution\b/.test(code) ? { program: `struct Solution;\n${code}` } : {}),
  };
}

/**
 * D: the functions are known when the program is built; compile-time reflection (std.traits) reads each one's
 * parameter types to convert the JSON arguments (numbers, bool, chars, strings, arrays) and writes the value with
 * std.json (associative arrays too).
 */
const D_CALL_DRIVER = String.raw`
// ---- rlpipe function-call driver (D): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
static import std.json;
private T rlpipeFromJson(T)(std.json.JSONValue j) {
    import std.json : JSONType;
    import std.traits : isArray, isSomeString, isIntegral, isFloatingPoint, isSomeChar;
    import std.conv : to;
    static if (is(T == bool)) return j.type == JSONType.true_;
    else static if (isSomeString!T) return j.str.to!T;
    else static if (isSomeChar!T) return j.type == JSONType.string ? j.str.to!(dchar[])[0].to!T : cast(T) j.integer;
    else static if (isIntegral!T) return j.type == JSONType.integer ? cast(T) j.integer : j.type == JSONType.uinteger ? cast(T) j.uinteger : cast(T) j.floating;
    else static if (isFloatingPoint!T) return j.type == JSONType.float_ ? cast(T) j.floating : j.type == JSONType.uinteger ? cast(T) j.uinteger : cast(T) j.integer;
    else static if (isArray!T) {
        import std.range : ElementType;
        T out_;
        foreach (x; j.array) out_ ~= rlpipeFromJson!(ElementType!T)(x);
        return out_;
    } else static assert(0, "rlpipe: cannot read a " ~ T.stringof ~ " from JSON");
}
private std.json.JSONValue rlpipeToJson(T)(T v) {
    import std.json : JSONValue;
    import std.traits : isArray, isSomeString, isSomeChar, isAssociativeArray;
    import std.conv : to;
    static if (isSomeString!T) return JSONValue(v.to!string);
    else static if (isSomeChar!T) return JSONValue(v.to!string);
    else static if (isArray!T) { JSONValue[] a; foreach (x; v) a ~= rlpipeToJson(x); return JSONValue(a); }
    else static if (isAssociativeArray!T) { JSONValue[string] o; foreach (k, x; v) o[k.to!string] = rlpipeToJson(x); return JSONValue(o); }
    else return JSONValue(v);
}
void main() {
    import std.json : parseJSON;
    import std.file : readText;
    import std.stdio : File;
    import std.traits : Parameters, ReturnType;
    auto call = parseJSON(readText(".rlpipe-call.json"));
    string fn = call["fn"].str;
    auto args = call["args"].array;
    string result;
    bool found = false;
    static foreach (name; [__NAMES__]) {
        if (fn == name) {
            found = true;
            alias F = mixin(name);
            Parameters!F params;
            static foreach (i, P; Parameters!F) params[i] = rlpipeFromJson!P(args[i]);
            static if (is(ReturnType!F == void)) { F(params); result = "null"; }
            else result = rlpipeToJson(F(params)).toString;
        }
    }
    if (!found) throw new Exception("function " ~ fn ~ " is not defined");
    File f;
    f.fdopen(3, "w");
    f.write(result);
    f.close();
}
`;

function dCallDriver(fnNames: readonly string[]): CallDriver {
  const names = fnNames.filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n)).map((n) => JSON.stringify(n));
  return { text: D_CALL_DRIVER.replace("__NAMES__", names.join(", ")) };
}

/**
 * Racket: the function by name, evaluated in the program's own module namespace, applied to the JSON arguments (read
 * with Racket's json library), the value written back as JSON (vectors as lists, chars as strings).
 */
const RACKET_CALL_DRIVER = String.raw`
;; ---- rlpipe function-call driver (Racket): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
(define-namespace-anchor rlpipe-anchor)
(let* ([read-json (dynamic-require 'json 'read-json)]
       [write-json (dynamic-require 'json 'write-json)]
       [call (call-with-input-file ".rlpipe-call.json" read-json)]
       [f (eval (string->symbol (hash-ref call 'fn)) (namespace-anchor->namespace rlpipe-anchor))]
       [value (apply f (hash-ref call 'args))]
       [jsonable (let loop ([v value]) (cond [(vector? v) (map loop (vector->list v))] [(list? v) (map loop v)] [(char? v) (string v)] [(void? v) 'null] [else v]))])
  (call-with-output-file "/dev/fd/3" (lambda (out) (write-json jsonable out)) #:exists 'append))
`;

/**
 * R: the function by name in the global environment, arguments and value through jsonlite (Debian's r-cran-jsonlite;
 * length-one vectors are written as scalars, R having no others).
 */
const R_CALL_DRIVER = String.raw`
# ---- rlpipe function-call driver (R): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
local({
  call <- jsonlite::fromJSON(".rlpipe-call.json", simplifyVector = FALSE)
  args <- lapply(call$args, function(a) if (is.list(a)) jsonlite::fromJSON(jsonlite::toJSON(a, auto_unbox = TRUE)) else a)
  value <- do.call(call$fn, args, envir = globalenv())
  out <- file("/dev/fd/3", "w")
  writeLines(jsonlite::toJSON(value, auto_unbox = TRUE, digits = NA, null = "null", na = "null"), out, sep = "")
  close(out)
})
`;

/**
 * C#: the method found by reflection in any class of the program (static, or on a fresh instance), arguments converted
 * to the parameter types (primitives, string, char, arrays, List/IList, Dictionary/IDictionary, nested), the value
 * written as JSON. Bare methods (ScaleBox style) are wrapped in class Program; the driver's class is the entry point.
 */
const CSHARP_CALL_DRIVER = String.raw`
// ---- rlpipe function-call driver (C#): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
static class RlpipeCall {
  sealed class Parser {
    readonly string t; int p;
    public Parser(string t) { this.t = t; }
    void Ws() { while (p < t.Length && char.IsWhiteSpace(t[p])) p++; }
    string Str() {
      var sb = new System.Text.StringBuilder(); p++;
      while (t[p] != '"') {
        char c = t[p++];
        if (c != '\\') { sb.Append(c); continue; }
        char e = t[p++];
        switch (e) {
          case 'n': sb.Append('\n'); break; case 't': sb.Append('\t'); break; case 'r': sb.Append('\r'); break;
          case 'b': sb.Append('\b'); break; case 'f': sb.Append('\f'); break;
          case 'u': sb.Append((char) System.Convert.ToInt32(t.Substring(p, 4), 16)); p += 4; break;
          default: sb.Append(e); break;
        }
      }
      p++;
      return sb.ToString();
    }
    public object Value() {
      Ws();
      char c = t[p];
      if (c == '{') {
        var m = new System.Collections.Generic.Dictionary<string, object>(); p++; Ws();
        if (t[p] == '}') { p++; return m; }
        for (;;) { Ws(); string k = Str(); Ws(); p++; m[k] = Value(); Ws(); if (t[p++] == '}') return m; }
      }
      if (c == '[') {
        var l = new System.Collections.Generic.List<object>(); p++; Ws();
        if (t[p] == ']') { p++; return l; }
        for (;;) { l.Add(Value()); Ws(); if (t[p++] == ']') return l; }
      }
      if (c == '"') return Str();
      if (string.CompareOrdinal(t, p, "true", 0, 4) == 0) { p += 4; return true; }
      if (string.CompareOrdinal(t, p, "false", 0, 5) == 0) { p += 5; return false; }
      if (string.CompareOrdinal(t, p, "null", 0, 4) == 0) { p += 4; return null; }
      int end = p; while (end < t.Length && "+-0123456789.eE".IndexOf(t[end]) >= 0) end++;
      string num = t.Substring(p, end - p); p = end;
      long n;
      if (long.TryParse(num, System.Globalization.NumberStyles.AllowLeadingSign, System.Globalization.CultureInfo.InvariantCulture, out n)) return n;
      return double.Parse(num, System.Globalization.CultureInfo.InvariantCulture);
    }
  }
  static object As(object v, System.Type type) {
    if (v == null) return null;
    var u = System.Nullable.GetUnderlyingType(type) ?? type;
    if (u == typeof(string)) return v.ToString();
    if (u == typeof(char)) return v is string ? ((string) v)[0] : (char) System.Convert.ToInt32(v);
    if (u == typeof(bool)) return System.Convert.ToBoolean(v);
    if (u.IsPrimitive || u == typeof(decimal)) return System.Convert.ChangeType(v, u, System.Globalization.CultureInfo.InvariantCulture);
    if (u.IsArray) {
      var l = (System.Collections.Generic.List<object>) v;
      var arr = System.Array.CreateInstance(u.GetElementType(), l.Count);
      for (int i = 0; i < l.Count; i++) arr.SetValue(As(l[i], u.GetElementType()), i);
      return arr;
    }
    if (u.IsGenericType && v is System.Collections.Generic.List<object>) {
      var elem = u.GetGenericArguments()[0];
      var concrete = u.IsInterface ? typeof(System.Collections.Generic.List<>).MakeGenericType(elem) : u;
      var list = (System.Collections.IList) System.Activator.CreateInstance(concrete);
      foreach (var x in (System.Collections.Generic.List<object>) v) list.Add(As(x, elem));
      return list;
    }
    if (u.IsGenericType && v is System.Collections.Generic.Dictionary<string, object>) {
      var args = u.GetGenericArguments();
      var concrete = u.IsInterface ? typeof(System.Collections.Generic.Dictionary<,>).MakeGenericType(args) : u;
      var dict = (System.Collections.IDictionary) System.Activator.CreateInstance(concrete);
      foreach (var e in (System.Collections.Generic.Dictionary<string, object>) v) dict.Add(As(e.Key, args[0]), As(e.Value, args[1]));
      return dict;
    }
    return v;
  }
  static string Quote(string s) {
    var sb = new System.Text.StringBuilder("\"");
    foreach (char c in s) {
      if (c == '"' || c == '\\') sb.Append('\\').Append(c);
      else if (c < 0x20) sb.Append("\\u").Append(((int) c).ToString("x4"));
      else sb.Append(c);
    }
    return sb.Append('"').ToString();
  }
  static string Json(object v) {
    if (v == null) return "null";
    if (v is string || v is char) return Quote(v.ToString());
    if (v is bool) return (bool) v ? "true" : "false";
    if (v is double || v is float || v is decimal) return System.Convert.ToDouble(v).ToString("R", System.Globalization.CultureInfo.InvariantCulture);
    if (v.GetType().IsPrimitive) return System.Convert.ToString(v, System.Globalization.CultureInfo.InvariantCulture);
    if (v is System.Collections.IDictionary) {
      var parts = new System.Collections.Generic.List<string>();
      foreach (System.Collections.DictionaryEntry e in (System.Collections.IDictionary) v) parts.Add(Quote(e.Key.ToString()) + ":" + Json(e.Value));
      return "{" + string.Join(",", parts) + "}";
    }
    if (v is System.Collections.IEnumerable) {
      var parts = new System.Collections.Generic.List<string>();
      foreach (var x in (System.Collections.IEnumerable) v) parts.Add(Json(x));
      return "[" + string.Join(",", parts) + "]";
    }
    return Quote(v.ToString());
  }
  public static void Main() {
    var call = (System.Collections.Generic.Dictionary<string, object>) new Parser(System.IO.File.ReadAllText(".rlpipe-call.json")).Value();
    var fn = (string) call["fn"];
    var args = (System.Collections.Generic.List<object>) call["args"];
    var flags = System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.DeclaredOnly;
    foreach (var type in typeof(RlpipeCall).Assembly.GetTypes()) {
      if (type == typeof(RlpipeCall) || type.DeclaringType == typeof(RlpipeCall)) continue;
      foreach (var m in type.GetMethods(flags)) {
        if (m.Name != fn || m.GetParameters().Length != args.Count || m.IsGenericMethodDefinition) continue;
        var ps = m.GetParameters();
        var values = new object[args.Count];
        for (int i = 0; i < values.Length; i++) values[i] = As(args[i], ps[i].ParameterType);
        object self = m.IsStatic ? null : System.Activator.CreateInstance(type, true);
        object res;
        try { res = m.Invoke(self, values); } catch (System.Reflection.TargetInvocationException e) { System.Runtime.ExceptionServices.ExceptionDispatchInfo.Capture(e.InnerException).Throw(); throw; }
        System.IO.File.WriteAllText("/dev/fd/3", m.ReturnType == typeof(void) ? "null" : Json(res));
        return;
      }
    }
    throw new System.MissingMethodException("function " + fn + " is not defined");
  }
}
`;

function csharpCallDriver(compile: readonly string[]): (fnNames: readonly string[], code: string) => CallDriver {
  return (_fnNames, code) => {
    // The program's own text (csharpProgram put it between #line markers, after the usings and before the shim).
    const own = /#line 1\n([\s\S]*)\n#line default\n/.exec(code)?.[1] ?? code;
    const bare = !/\b(?:class|struct|interface|record)\s+[A-Za-z_]/.test(own);
    return {
      text: CSHARP_CALL_DRIVER, compile: [...compile.slice(0, -1), "-main:RlpipeCall", compile[compile.length - 1]!],
      ...(bare ? { program: code.replace(/#line 1\n([\s\S]*)\n#line default\n/, (_m, body: string) => `#line 1\npublic class Program {\n${body}\n}\n#line default\n`) } : {}),
    };
  };
}

/**
 * C# as the .NET SDK builds a console program (SandboxFusion runs dotnet): its implicit usings, and Debug.Assert that
 * ends the process ("Process terminated. Assertion failed.", exit 134) instead of Mono's, which only tells its trace
 * listeners. The program keeps its own line numbers (#line).
 */
const CSHARP_IMPLICIT_USINGS = `using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
`;
const CSHARP_DEBUG = String.raw`
namespace System.Diagnostics {
  // .NET's Debug.Assert ends the process ("Assertion failed"); Mono's only tells its trace listeners.
  static class Debug {
    public static void Assert(bool condition) { if (!condition) Fail(null); }
    public static void Assert(bool condition, string message) { if (!condition) Fail(message); }
    public static void Assert(bool condition, string message, string detail) { if (!condition) Fail(message + Environment.NewLine + detail); }
    public static void Fail(string message) {
      Console.Out.Flush();
      Console.Error.WriteLine("Process terminated. Assertion failed." + (message == null ? "" : Environment.NewLine + message));
      Console.Error.WriteLine(new StackTrace(1, true));
      Environment.Exit(134);
    }
    public static void Fail(string message, string detail) { Fail(message + Environment.NewLine + detail); }
    public static void WriteLine(string message) { }
    public static void WriteLine(object value) { }
    public static void WriteLine(string format, params object[] args) { }
    public static void Write(string message) { }
    public static void Write(object value) { }
    public static void Print(string message) { }
    public static void Print(string format, params object[] args) { }
  }
}
`;

function csharpProgram(code: string): { code: string } {
  return { code: `${CSHARP_IMPLICIT_USINGS}#line 1\n${eraseNullableAnnotations(code)}\n#line default\n${CSHARP_DEBUG}` };
}

/** Debian packages per language, for `rlpipe sandbox setup --languages`. */
export const TOOLCHAIN_PACKAGES: Readonly<Record<string, readonly string[]>> = {
  cpp: ["g++"], nodejs: ["nodejs"], go: ["golang-go"], java: ["openjdk-17-jdk-headless"], rust: ["rustc"], bash: ["bash"],
  perl: ["perl"], php: ["php-cli"], ruby: ["ruby"], lua: ["lua5.4"], R: ["r-base-core"], D_ut: ["ldc"], verilog: ["iverilog"],
  racket: ["racket"], scala: ["scala"], csharp: ["mono-mcs", "mono-runtime"], kotlin_script: ["kotlin"],
  // Swift (Debian 13's) and Julia (Debian 11's) come in roots of their own (debian-root.ts): the host needs only
  // debootstrap to build them.
  swift: ["debootstrap"], julia: ["debootstrap"],
};

/**
 * Libraries SandboxFusion's programs use with a language (Lua's luaunit, Perl's Test::Deep), installed with it even
 * where its toolchain came some other way.
 */
export const TOOLCHAIN_LIBRARIES: Readonly<Record<string, readonly string[]>> = {
  lua: ["lua-unit"], perl: ["libtest-deep-perl", "libdata-compare-perl"], R: ["r-cran-jsonlite"],
};
