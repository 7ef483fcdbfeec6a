// Function-call drivers for Kotlin scripts, Scala, Verilog, Swift and Julia (those of the other languages sit beside
// their toolchains in toolchains.ts): code added to a program that reads `.rlpipe-call.json` ({fn, args}) in the
// case's directory, calls the function and writes its value as JSON on descriptor 3, where the harness compares it
// with the expected value kept outside the sandbox.

/** What a language adds to a program for function-call cases (Toolchain.callDriver). */
export interface CallDriver {
  readonly text: string;
  /** The program to build instead of the one given (Java: bare methods wrapped in a class). */
  readonly program?: string;
  /** The run step instead of the toolchain's (Java: the driver's class is the entry point). */
  readonly run?: readonly string[];
  /** The build step instead of the toolchain's (C#: the driver's class is the entry point). */
  readonly compile?: readonly string[];
  /** A file of its own in /work/src (languages that build a directory); absent: appended to the program. */
  readonly file?: string;
  /** Put before the program (Go: its package clause, when the completion has none). */
  readonly prefix?: string;
}

/**
 * Kotlin scripts: the script's top-level functions are methods of its class (and `class Solution`'s, a class nested
 * in it), found by name through Java reflection; arguments take the parameters' generic types (Kotlin's List<Int> is
 * java.util.List<Integer>, IntArray is int[]), the value is written as JSON on descriptor 3.
 */
export const KOTLIN_CALL_DRIVER = String.raw`
// ---- rlpipe function-call driver (Kotlin): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
class RlpipeCall(private val t: String) {
    private var p = 0
    private fun ws() { while (p < t.length && t[p].isWhitespace()) p++ }
    private fun str(): String {
        val out = StringBuilder(); p++
        while (t[p] != '"') {
            val c = t[p++]
            if (c != '\\') { out.append(c); continue }
            val e = t[p++]
            when (e) {
                'n' -> out.append('\n'); 't' -> out.append('\t'); 'r' -> out.append('\r'); 'b' -> out.append('\b'); 'f' -> out.append('\u000c')
                'u' -> { out.append(t.substring(p, p + 4).toInt(16).toChar()); p += 4 }
                else -> out.append(e)
            }
        }
        p++
        return out.toString()
    }
    fun value(): Any? {
        ws()
        val c = t[p]
        if (c == '{') {
            val m = LinkedHashMap<String, Any?>(); p++; ws()
            if (t[p] == '}') { p++; return m }
            while (true) { ws(); val k = str(); ws(); p++; m[k] = value(); ws(); if (t[p++] == '}') return m }
        }
        if (c == '[') {
            val l = ArrayList<Any?>(); p++; ws()
            if (t[p] == ']') { p++; return l }
            while (true) { l.add(value()); ws(); if (t[p++] == ']') return l }
        }
        if (c == '"') return str()
        if (t.startsWith("true", p)) { p += 4; return true }
        if (t.startsWith("false", p)) { p += 5; return false }
        if (t.startsWith("null", p)) { p += 4; return null }
        var end = p
        while (end < t.length && "+-0123456789.eE".indexOf(t[end]) >= 0) end++
        val num = t.substring(p, end); p = end
        if (Regex("-?\\d+").matches(num)) return num.toLongOrNull() ?: java.math.BigInteger(num)
        return num.toDouble()
    }
    companion object {
        private fun raw(type: java.lang.reflect.Type): Class<*> = when (type) {
            is Class<*> -> type
            is java.lang.reflect.ParameterizedType -> type.rawType as Class<*>
            is java.lang.reflect.WildcardType -> raw(type.upperBounds[0])
            else -> Any::class.java
        }
        private fun typeArg(type: java.lang.reflect.Type, i: Int): java.lang.reflect.Type = when (type) {
            is java.lang.reflect.ParameterizedType -> type.actualTypeArguments[i]
            is java.lang.reflect.WildcardType -> typeArg(type.upperBounds[0], i)
            else -> Any::class.java
        }
        /** A JSON value as a parameter of this (generic) type. */
        fun convert(v: Any?, type: java.lang.reflect.Type): Any? {
            if (v == null) return null
            val r = raw(type)
            return when {
                r == Int::class.javaPrimitiveType || r == Int::class.javaObjectType -> (v as Number).toInt()
                r == Long::class.javaPrimitiveType || r == Long::class.javaObjectType -> (v as Number).toLong()
                r == Double::class.javaPrimitiveType || r == Double::class.javaObjectType -> (v as Number).toDouble()
                r == Float::class.javaPrimitiveType || r == Float::class.javaObjectType -> (v as Number).toFloat()
                r == Short::class.javaPrimitiveType || r == Short::class.javaObjectType -> (v as Number).toShort()
                r == Byte::class.javaPrimitiveType || r == Byte::class.javaObjectType -> (v as Number).toByte()
                r == Char::class.javaPrimitiveType || r == Char::class.javaObjectType -> if (v is String) v[0] else (v as Number).toInt().toChar()
                r == String::class.java -> v.toString()
                r.isArray -> {
                    val l = v as List<*>
                    val arr = java.lang.reflect.Array.newInstance(r.componentType, l.size)
                    for (i in l.indices) java.lang.reflect.Array.set(arr, i, convert(l[i], r.componentType))
                    arr
                }
                java.util.Set::class.java.isAssignableFrom(r) -> (v as List<*>).mapTo(LinkedHashSet<Any?>()) { convert(it, typeArg(type, 0)) }
                java.util.Collection::class.java.isAssignableFrom(r) -> (v as List<*>).mapTo(ArrayList<Any?>()) { convert(it, typeArg(type, 0)) }
                java.util.Map::class.java.isAssignableFrom(r) -> (v as Map<*, *>).entries.associateTo(LinkedHashMap<Any?, Any?>()) { it.key to convert(it.value, typeArg(type, 1)) }
                r == Pair::class.java -> { val l = v as List<*>; Pair(convert(l[0], typeArg(type, 0)), convert(l[1], typeArg(type, 1))) }
                else -> v
            }
        }
        private fun quote(s: String): String {
            val out = StringBuilder("\"")
            for (c in s) {
                if (c == '"' || c == '\\') out.append('\\').append(c)
                else if (c < ' ') out.append(String.format("\\u%04x", c.toInt()))
                else out.append(c)
            }
            return out.append('"').toString()
        }
        fun json(v: Any?): String = when {
            v == null || v == Unit -> "null"
            v is String || v is Char -> quote(v.toString())
            v is Double || v is Float -> { val d = (v as Number).toDouble(); if (!d.isFinite()) "null" else if (d == Math.rint(d) && Math.abs(d) < 1e15) d.toLong().toString() + ".0" else d.toString() }
            v is Number || v is Boolean -> v.toString()
            v.javaClass.isArray -> (0 until java.lang.reflect.Array.getLength(v)).joinToString(",", "[", "]") { json(java.lang.reflect.Array.get(v, it)) }
            v is Iterable<*> -> v.joinToString(",", "[", "]") { json(it) }
            v is Map<*, *> -> v.entries.joinToString(",", "{", "}") { quote(it.key.toString()) + ":" + json(it.value) }
            v is Pair<*, *> -> "[" + json(v.first) + "," + json(v.second) + "]"
            v is Triple<*, *, *> -> "[" + json(v.first) + "," + json(v.second) + "," + json(v.third) + "]"
            else -> quote(v.toString())
        }
        fun call(script: Any) {
            val file = java.io.File(".rlpipe-call.json")
            if (!file.exists()) return
            @Suppress("UNCHECKED_CAST") val call = RlpipeCall(file.readText()).value() as Map<String, Any?>
            val fn = call["fn"] as String
            val args = call["args"] as List<*>
            val owners = ArrayList<Pair<Class<*>, () -> Any?>>()
            owners.add(Pair(script.javaClass, { script }))
            for (c in script.javaClass.declaredClasses) if (c.simpleName == "Solution") owners.add(Pair(c, {
                val ctor = c.declaredConstructors.first { it.parameterCount == 0 || (it.parameterCount == 1 && it.parameterTypes[0] == script.javaClass) }
                ctor.isAccessible = true
                if (ctor.parameterCount == 0) ctor.newInstance() else ctor.newInstance(script)
            }))
            for ((cls, self) in owners) {
                val m = cls.declaredMethods.firstOrNull { it.name == fn && it.parameterCount == args.size } ?: continue
                val types = m.genericParameterTypes
                val values = Array<Any?>(args.size) { convert(args[it], types[it]) }
                m.isAccessible = true
                val target = if (java.lang.reflect.Modifier.isStatic(m.modifiers)) null else self()
                val res = try { m.invoke(target, *values) } catch (e: java.lang.reflect.InvocationTargetException) { throw e.cause ?: e }
                java.io.FileOutputStream("/dev/fd/3").use { it.write((if (m.returnType == Void.TYPE) "null" else json(res)).toByteArray(Charsets.UTF_8)) }
                return
            }
            throw NoSuchMethodError("function " + fn + " is not defined")
        }
    }
}
RlpipeCall.call(this)
`;

/**
 * Scala: the functions are known when the program is built, so each is called through an eta-expansion
 * (`Owner.f _`) and implicit converters chosen by the compiler from its parameter types (Scala erases List[Int] to
 * List<Object>, so reflection could not tell). The value is written as JSON by its runtime shape (collections, arrays,
 * maps, tuples, Option).
 */
const SCALA_CALL_DRIVER = String.raw`
// ---- rlpipe function-call driver (Scala): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
object RlpipeCall {
  private class Parser(t: String) {
    private var p = 0
    private def ws(): Unit = while (p < t.length && Character.isWhitespace(t.charAt(p))) p += 1
    private def str(): String = {
      val out = new StringBuilder; p += 1
      while (t.charAt(p) != '"') {
        val c = t.charAt(p); p += 1
        if (c != '\\') out.append(c)
        else {
          val e = t.charAt(p); p += 1
          e match {
            case 'n' => out.append('\n'); case 't' => out.append('\t'); case 'r' => out.append('\r'); case 'b' => out.append('\b'); case 'f' => out.append('\f')
            case 'u' => out.append(Integer.parseInt(t.substring(p, p + 4), 16).toChar); p += 4
            case other => out.append(other)
          }
        }
      }
      p += 1
      out.toString
    }
    def value(): Any = {
      ws()
      t.charAt(p) match {
        case '{' =>
          val m = scala.collection.mutable.LinkedHashMap[String, Any](); p += 1; ws()
          if (t.charAt(p) == '}') { p += 1 } else {
            var more = true
            while (more) { ws(); val k = str(); ws(); p += 1; m(k) = value(); ws(); more = t.charAt(p) != '}'; p += 1 }
          }
          m.toList
        case '[' =>
          val l = scala.collection.mutable.ListBuffer[Any](); p += 1; ws()
          if (t.charAt(p) == ']') { p += 1 } else {
            var more = true
            while (more) { l += value(); ws(); more = t.charAt(p) != ']'; p += 1 }
          }
          l.toList
        case '"' => str()
        case _ if t.startsWith("true", p) => p += 4; true
        case _ if t.startsWith("false", p) => p += 5; false
        case _ if t.startsWith("null", p) => p += 4; null
        case _ =>
          var end = p
          while (end < t.length && "+-0123456789.eE".indexOf(t.charAt(end)) >= 0) end += 1
          val num = t.substring(p, end); p = end
          if (num.matches("-?\\d+")) BigInt(num) else num.toDouble
      }
    }
  }
  /** A JSON value as the parameter type T, chosen by the compiler from the function's signature. */
  trait From[T] { def apply(v: Any): T }
  private def from[T](f: Any => T): From[T] = new From[T] { def apply(v: Any): T = f(v) }
  private def num(v: Any): java.lang.Number = v match { case n: BigInt => n.bigInteger; case n: java.lang.Number => n; case c: Char => Int.box(c.toInt) }
  private def list(v: Any): List[Any] = v.asInstanceOf[List[Any]]
  implicit val fromInt: From[Int] = from(v => num(v).intValue)
  implicit val fromLong: From[Long] = from(v => num(v).longValue)
  implicit val fromDouble: From[Double] = from(v => num(v).doubleValue)
  implicit val fromFloat: From[Float] = from(v => num(v).floatValue)
  implicit val fromShort: From[Short] = from(v => num(v).shortValue)
  implicit val fromByte: From[Byte] = from(v => num(v).byteValue)
  implicit val fromBigInt: From[BigInt] = from { case n: BigInt => n; case v => BigInt(num(v).longValue) }
  implicit val fromBoolean: From[Boolean] = from(_.asInstanceOf[Boolean])
  implicit val fromChar: From[Char] = from { case s: String => s.charAt(0); case v => num(v).intValue.toChar }
  implicit val fromString: From[String] = from(v => String.valueOf(v))
  implicit val fromAny: From[Any] = from(v => v)
  implicit def fromOption[T](implicit f: From[T]): From[Option[T]] = from(v => Option(v).map(f(_)))
  implicit def fromList[T](implicit f: From[T]): From[List[T]] = from(v => list(v).map(f(_)))
  implicit def fromSeq[T](implicit f: From[T]): From[Seq[T]] = from(v => list(v).map(f(_)))
  implicit def fromIndexedSeq[T](implicit f: From[T]): From[IndexedSeq[T]] = from(v => list(v).map(f(_)).toVector)
  implicit def fromVector[T](implicit f: From[T]): From[Vector[T]] = from(v => list(v).map(f(_)).toVector)
  implicit def fromSet[T](implicit f: From[T]): From[Set[T]] = from(v => list(v).map(f(_)).toSet)
  implicit def fromArray[T](implicit f: From[T], c: scala.reflect.ClassTag[T]): From[Array[T]] = from(v => list(v).map(f(_)).toArray)
  implicit def fromMap[V](implicit f: From[V]): From[Map[String, V]] = from(v => v.asInstanceOf[List[(String, Any)]].map { case (k, x) => (k, f(x)) }.toMap)
  implicit def fromPair[A, B](implicit a: From[A], b: From[B]): From[(A, B)] = from { v => val l = list(v); (a(l(0)), b(l(1))) }
  private def quote(s: String): String = {
    val out = new StringBuilder("\"")
    for (c <- s) { if (c == '"' || c == '\\') out.append('\\').append(c) else if (c < ' ') out.append("\\u%04x".format(c.toInt)) else out.append(c) }
    out.append('"').toString
  }
  def json(v: Any): String = v match {
    case null | () | None => "null"
    case Some(x) => json(x)
    case s: String => quote(s)
    case c: Char => quote(c.toString)
    case d: Double => if (d.isNaN || d.isInfinite) "null" else if (d == math.rint(d) && math.abs(d) < 1e15) d.toLong.toString + ".0" else d.toString
    case f: Float => json(f.toDouble)
    case n: java.lang.Number => n.toString
    case b: Boolean => b.toString
    case a: Array[_] => a.map(json).mkString("[", ",", "]")
    case m: scala.collection.Map[_, _] => m.map { case (k, x) => quote(String.valueOf(k)) + ":" + json(x) }.mkString("{", ",", "}")
    case i: Iterable[_] => i.map(json).mkString("[", ",", "]")
    case p: Product if p.productPrefix.startsWith("Tuple") => p.productIterator.map(json).mkString("[", ",", "]")
    case x => quote(x.toString)
  }
  def invoke[R](f: () => R, a: List[Any]): Any = f()
  def invoke[A, R](f: A => R, a: List[Any])(implicit fa: From[A]): Any = f(fa(a(0)))
  def invoke[A, B, R](f: (A, B) => R, a: List[Any])(implicit fa: From[A], fb: From[B]): Any = f(fa(a(0)), fb(a(1)))
  def invoke[A, B, C, R](f: (A, B, C) => R, a: List[Any])(implicit fa: From[A], fb: From[B], fc: From[C]): Any = f(fa(a(0)), fb(a(1)), fc(a(2)))
  def invoke[A, B, C, D, R](f: (A, B, C, D) => R, a: List[Any])(implicit fa: From[A], fb: From[B], fc: From[C], fd: From[D]): Any = f(fa(a(0)), fb(a(1)), fc(a(2)), fd(a(3)))
  def invoke[A, B, C, D, E, R](f: (A, B, C, D, E) => R, a: List[Any])(implicit fa: From[A], fb: From[B], fc: From[C], fd: From[D], fe: From[E]): Any = f(fa(a(0)), fb(a(1)), fc(a(2)), fd(a(3)), fe(a(4)))
  def invoke[A, B, C, D, E, F, R](f: (A, B, C, D, E, F) => R, a: List[Any])(implicit fa: From[A], fb: From[B], fc: From[C], fd: From[D], fe: From[E], ff: From[F]): Any = f(fa(a(0)), fb(a(1)), fc(a(2)), fd(a(3)), fe(a(4)), ff(a(5)))
  def main(argv: Array[String]): Unit = {
    val text = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(".rlpipe-call.json")), "UTF-8")
    val call = new Parser(text).value().asInstanceOf[List[(String, Any)]].toMap
    val args = list(call("args"))
    val value: Any = call("fn") match {
__DISPATCH__
      case fn => throw new NoSuchMethodError("function " + fn + " is not defined")
    }
    val out = new java.io.FileOutputStream("/dev/fd/3")
    try out.write(json(value).getBytes("UTF-8")) finally out.close()
  }
}
`;

export interface DefOwner { readonly kind: "object" | "class"; readonly path: readonly string[] }

/**
 * Where each function a program defines is: the innermost enclosing object (called on it) or class (called on a new
 * instance), or null at top level. `decl` matches a declaration keyword and the type's name (an `object` keyword makes
 * it an object), `def` a function's keyword and name; both sticky. Comments and string literals are skipped whole (their
 * braces do not count); a function inside another's body is local and not listed.
 */
export function defOwners(code: string, decl: RegExp, def: RegExp): Map<string, DefOwner | null> {
  const owners = new Map<string, DefOwner | null>();
  const stack: { kind: "object" | "class" | "block"; name: string }[] = [];
  let pending: { kind: "object" | "class"; name: string } | undefined;
  const SKIP = /\/\/[^\n]*|\/\*[\s\S]*?\*\/|"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)'/y;
  const at = (re: RegExp, i: number) => { re.lastIndex = i; return re.exec(code); };
  let i = 0;
  while (i < code.length) {
    const skip = at(SKIP, i);
    if (skip !== null) { i += skip[0].length; continue; }
    const boundary = i === 0 || !/[A-Za-z0-9_$]/.test(code[i - 1]!);
    const d = boundary ? at(decl, i) : null;
    if (d !== null) { pending = { kind: d[1] === "object" ? "object" : "class", name: d[2]! }; i += d[0].length; continue; }
    const f = boundary ? at(def, i) : null;
    if (f !== null) {
      pending = undefined;
      if (!owners.has(f[1]!)) {
        const named = stack.filter((s) => s.kind !== "block");
        const inner = named[named.length - 1];
        const local = stack.length > 0 && stack[stack.length - 1]!.kind === "block";
        if (!local) owners.set(f[1]!, inner === undefined ? null : { kind: inner.kind as "object" | "class", path: named.map((s) => s.name) });
      }
      i += f[0].length;
      continue;
    }
    const c = code[i]!;
    if (c === "{") { stack.push(pending === undefined ? { kind: "block", name: "" } : pending); pending = undefined; }
    else if (c === "}") stack.pop();
    i++;
  }
  return owners;
}

/** Where each of a Scala program's `def`s is (defOwners). */
export function scalaDefOwners(code: string): Map<string, DefOwner | null> {
  return defOwners(code, /(object|class|trait)\s+([A-Za-z_$][A-Za-z0-9_$]*)/y, /def\s+([A-Za-z_$][A-Za-z0-9_$]*)/y);
}

/**
 * Scala's call driver: a completion of bare `def`s (ScaleBox's style) is put in `object Main`; a function is called
 * on its object, or on a new instance of its class (LeetCode's `class Solution`). The driver's object is the entry
 * point (`run` names it); a function the program lacks fails that case only, at run time.
 */
export function scalaCallDriver(runPrefix: readonly string[]): (fnNames: readonly string[], code: string) => CallDriver {
  return (fnNames, code) => {
    const names = fnNames.filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
    let owners = scalaDefOwners(code);
    let program: string | undefined;
    if (names.some((n) => owners.get(n) === null)) {
      const lines = code.split("\n");
      const head = lines.filter((l) => /^\s*(?:import|package)\s/.test(l));
      const body = lines.filter((l) => !/^\s*(?:import|package)\s/.test(l));
      program = [...head, "object Main {", ...body, "}"].join("\n");
      owners = scalaDefOwners(program);
    }
    const dispatch = names.flatMap((n) => {
      const owner = owners.get(n);
      if (owner === undefined || owner === null) return [];
      const target = owner.kind === "object" ? owner.path.join(".") : `new ${owner.path.join(".")}()`;
      return [`      case ${JSON.stringify(n)} => invoke(${target}.${n} _, args)`];
    });
    return { text: SCALA_CALL_DRIVER.replace("__DISPATCH__", dispatch.join("\n")), run: [...runPrefix, "RlpipeCall"], ...(program === undefined ? {} : { program }) };
  };
}

/**
 * Verilog: the functions go in the test bench module (`tb`, the one iverilog elaborates), as ScaleBox does; an
 * initial block reads the call (integer and boolean arguments), calls the function by name with its arity, known
 * from its declaration, and writes the value in decimal on descriptor 3.
 */
const VERILOG_CALL_DRIVER = String.raw`
  // ---- rlpipe function-call driver (Verilog): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
  reg [7:0] rlpipe_text [0:65535];
  integer rlpipe_len, rlpipe_i, rlpipe_fd, rlpipe_ch, rlpipe_n;
  reg [8*256-1:0] rlpipe_fn;
  reg signed [63:0] rlpipe_a [0:15];
  reg signed [63:0] rlpipe_v, rlpipe_res;
  reg rlpipe_neg, rlpipe_done;
  initial begin
    rlpipe_fd = $fopen(".rlpipe-call.json", "r");
    rlpipe_len = 0;
    rlpipe_ch = $fgetc(rlpipe_fd);
    while (rlpipe_ch != -1 && rlpipe_len < 65536) begin
      rlpipe_text[rlpipe_len] = rlpipe_ch; rlpipe_len = rlpipe_len + 1; rlpipe_ch = $fgetc(rlpipe_fd);
    end
    $fclose(rlpipe_fd);
    // {"fn": "<name>", "args": [...]}: the name is the second string, the arguments follow the next [.
    rlpipe_i = 0; rlpipe_n = 0;
    while (rlpipe_n < 3) begin
      if (rlpipe_text[rlpipe_i] == 8'h22) rlpipe_n = rlpipe_n + 1;
      rlpipe_i = rlpipe_i + 1;
    end
    rlpipe_fn = 0;
    while (rlpipe_text[rlpipe_i] != 8'h22) begin rlpipe_fn = {rlpipe_fn[8*255-1:0], rlpipe_text[rlpipe_i]}; rlpipe_i = rlpipe_i + 1; end
    while (rlpipe_text[rlpipe_i] != "[") rlpipe_i = rlpipe_i + 1;
    rlpipe_i = rlpipe_i + 1; rlpipe_n = 0; rlpipe_done = 0;
    while (!rlpipe_done) begin
      rlpipe_ch = rlpipe_text[rlpipe_i];
      if (rlpipe_ch == "]") rlpipe_done = 1;
      else if (rlpipe_ch == "-" || (rlpipe_ch >= "0" && rlpipe_ch <= "9")) begin
        rlpipe_neg = rlpipe_ch == "-";
        if (rlpipe_neg) rlpipe_i = rlpipe_i + 1;
        rlpipe_v = 0;
        while (rlpipe_text[rlpipe_i] >= "0" && rlpipe_text[rlpipe_i] <= "9") begin
          rlpipe_v = rlpipe_v * 10 + (rlpipe_text[rlpipe_i] - "0"); rlpipe_i = rlpipe_i + 1;
        end
        if (rlpipe_text[rlpipe_i] == "." || rlpipe_text[rlpipe_i] == "e" || rlpipe_text[rlpipe_i] == "E") begin
          $fdisplay(32'h8000_0002, "rlpipe: Verilog function calls take integer and boolean arguments"); $fatal(1);
        end
        rlpipe_a[rlpipe_n] = rlpipe_neg ? -rlpipe_v : rlpipe_v; rlpipe_n = rlpipe_n + 1;
      end
      else if (rlpipe_ch == "t") begin rlpipe_a[rlpipe_n] = 1; rlpipe_n = rlpipe_n + 1; rlpipe_i = rlpipe_i + 4; end
      else if (rlpipe_ch == "f") begin rlpipe_a[rlpipe_n] = 0; rlpipe_n = rlpipe_n + 1; rlpipe_i = rlpipe_i + 5; end
      else if (rlpipe_ch == " " || rlpipe_ch == ",") rlpipe_i = rlpipe_i + 1;
      else begin $fdisplay(32'h8000_0002, "rlpipe: Verilog function calls take integer and boolean arguments"); $fatal(1); end
    end
__DISPATCH__
    rlpipe_fd = $fopen("/dev/fd/3", "w");
    $fwrite(rlpipe_fd, "%0d", rlpipe_res);
    $fclose(rlpipe_fd);
    $finish;
  end
endmodule
`;

/** How many inputs a Verilog function declares (ANSI port list or input declarations), or undefined if none is declared. */
export function verilogFunctionArity(code: string, name: string): number | undefined {
  const text = code.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, " ");
  const head = new RegExp(String.raw`\bfunction\b[^;()]*?\b${name}\s*([(;])`).exec(text);
  if (head === null) return undefined;
  const from = head.index + head[0].length;
  const items = (list: string) => list.split(",").map((s) => s.trim()).filter((s) => s.length > 0).length;
  if (head[1] === "(") {
    let depth = 1;
    let end = from;
    while (end < text.length && depth > 0) { if (text[end] === "(") depth++; else if (text[end] === ")") depth--; end++; }
    return items(text.slice(from, end - 1));
  }
  const body = text.slice(from, text.indexOf("endfunction", from) < 0 ? text.length : text.indexOf("endfunction", from));
  let n = 0;
  for (const m of body.matchAll(/\binput\b([^;]*);/g)) n += items(m[1]!.replace(/\[[^\]]*\]/g, " "));
  return n;
}

/** Verilog's call driver: the program becomes the body of module tb, and the driver its initial block. */
export function verilogCallDriver(fnNames: readonly string[], code: string): CallDriver {
  const dispatch = fnNames.filter((n) => /^[A-Za-z_][A-Za-z0-9_$]*$/.test(n)).flatMap((n) => {
    const arity = verilogFunctionArity(code, n);
    if (arity === undefined || arity > 16) return [];
    const args = Array.from({ length: arity }, (_, i) => `rlpipe_a[${i}]`).join(", ");
    return [`    if (rlpipe_fn == ${JSON.stringify(n)} && rlpipe_n == ${arity}) rlpipe_res = ${n}(${args});\n    else`];
  });
  const fallback = `    begin $fdisplay(32'h8000_0002, "rlpipe: function %0s taking %0d arguments is not defined", rlpipe_fn, rlpipe_n); $fatal(1); end`;
  return { program: `module tb;\n${code}\n`, text: VERILOG_CALL_DRIVER.replace("__DISPATCH__", [...dispatch, fallback].join("\n")) };
}

/**
 * Swift: the functions are known when the program is built, so each is called with its own argument labels (read
 * from its declaration) and arguments converted by a protocol that the parameter types select at compile time
 * (Int, Double, Bool, String, Character, arrays, sets, optionals, [String: T]); the value is written as JSON by its
 * runtime shape (Mirror: collections, dictionaries, tuples, optionals).
 */
const SWIFT_CALL_DRIVER = String.raw`
// ---- rlpipe function-call driver (Swift): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
import Foundation
protocol RlpipeArg { static func rlpipeFrom(_ v: Any) -> Self }
func rlpipeNumber(_ v: Any) -> NSNumber {
    if let n = v as? NSNumber { return n }
    if let i = v as? Int { return NSNumber(value: i) }
    if let d = v as? Double { return NSNumber(value: d) }
    if let b = v as? Bool { return NSNumber(value: b) }
    fatalError("rlpipe: \(v) is not a number")
}
extension Int: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Int { rlpipeNumber(v).intValue } }
extension Int64: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Int64 { rlpipeNumber(v).int64Value } }
extension Int32: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Int32 { rlpipeNumber(v).int32Value } }
extension UInt: RlpipeArg { static func rlpipeFrom(_ v: Any) -> UInt { rlpipeNumber(v).uintValue } }
extension Double: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Double { rlpipeNumber(v).doubleValue } }
extension Float: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Float { rlpipeNumber(v).floatValue } }
extension Bool: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Bool { rlpipeNumber(v).boolValue } }
extension String: RlpipeArg { static func rlpipeFrom(_ v: Any) -> String { v as? String ?? "\(v)" } }
extension Character: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Character { (v as? String)?.first ?? Character(UnicodeScalar(UInt8(rlpipeNumber(v).intValue))) } }
extension Array: RlpipeArg where Element: RlpipeArg { static func rlpipeFrom(_ v: Any) -> [Element] { (v as! [Any]).map { Element.rlpipeFrom($0) } } }
extension Set: RlpipeArg where Element: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Set<Element> { Set((v as! [Any]).map { Element.rlpipeFrom($0) }) } }
extension Optional: RlpipeArg where Wrapped: RlpipeArg { static func rlpipeFrom(_ v: Any) -> Wrapped? { v is NSNull ? nil : Wrapped.rlpipeFrom(v) } }
extension Dictionary: RlpipeArg where Key == String, Value: RlpipeArg { static func rlpipeFrom(_ v: Any) -> [String: Value] { (v as! [String: Any]).mapValues { Value.rlpipeFrom($0) } } }
func rlpipeArg<T: RlpipeArg>(_ args: [Any], _ i: Int) -> T { T.rlpipeFrom(args[i]) }
func rlpipeQuote(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
        default: out.unicodeScalars.append(u)
        }
    }
    return out + "\""
}
func rlpipeJSON(_ v: Any) -> String {
    let m = Mirror(reflecting: v)
    if m.displayStyle == .optional { return m.children.first.map { rlpipeJSON($0.value) } ?? "null" }
    switch v {
    case let b as Bool: return b ? "true" : "false"
    case let i as Int: return String(i)
    case let i as Int64: return String(i)
    case let i as Int32: return String(i)
    case let i as UInt: return String(i)
    case let d as Double: return d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) + ".0" : "\(d)") : "null"
    case let f as Float: return rlpipeJSON(Double(f))
    case let s as String: return rlpipeQuote(s)
    case let c as Character: return rlpipeQuote(String(c))
    case is Void: return "null"
    default: break
    }
    switch m.displayStyle {
    case .collection?, .set?, .tuple?: return "[" + m.children.map { rlpipeJSON($0.value) }.joined(separator: ",") + "]"
    case .dictionary?:
        return "{" + m.children.map { pair -> String in
            let kv = Array(Mirror(reflecting: pair.value).children)
            return rlpipeQuote("\(kv[0].value)") + ":" + rlpipeJSON(kv[1].value)
        }.joined(separator: ",") + "}"
    default: return rlpipeQuote("\(v)")
    }
}
let rlpipeCall = try! JSONSerialization.jsonObject(with: try! Data(contentsOf: URL(fileURLWithPath: ".rlpipe-call.json")), options: [.fragmentsAllowed]) as! [String: Any]
let rlpipeArgs = rlpipeCall["args"] as! [Any]
let rlpipeValue: Any
switch rlpipeCall["fn"] as! String {
__DISPATCH__
case let fn: fatalError("rlpipe: function \(fn) is not defined")
}
FileHandle(fileDescriptor: 3).write(rlpipeJSON(rlpipeValue).data(using: .utf8)!)
`;

/** A Swift function's argument labels ("" where it takes none, `_`), or undefined when the program declares no such function. */
export function swiftArgumentLabels(code: string, name: string): string[] | undefined {
  const head = new RegExp(String.raw`\bfunc\s+${name}\s*(?:<[^>{]*>)?\s*\(`).exec(code);
  if (head === null) return undefined;
  let depth = 1;
  let end = head.index + head[0].length;
  const params: string[] = [];
  let current = "";
  while (end < code.length && depth > 0) {
    const c = code[end]!;
    if (c === "(" || c === "[" || c === "<") depth++;
    else if (c === ")" || c === "]" || c === ">") depth--;
    if (depth === 1 && c === ",") { params.push(current); current = ""; }
    else if (depth > 0) current += c;
    end++;
  }
  if (current.trim() !== "") params.push(current);
  return params.map((p) => {
    const m = /^\s*(?:@\w+\s+)*([A-Za-z_][A-Za-z0-9_]*)(?:\s+([A-Za-z_][A-Za-z0-9_]*))?\s*:/.exec(p);
    const label = m?.[1] ?? "_";
    return label === "_" ? "" : label;
  });
}

/** Swift's call driver (in the program's main.swift, after its own top-level code): a switch over the called names. */
export function swiftCallDriver(fnNames: readonly string[], code: string): CallDriver {
  const owners = defOwners(code, /(class|struct|enum|extension|actor)\s+([A-Za-z_][A-Za-z0-9_]*)/y, /func\s+([A-Za-z_][A-Za-z0-9_]*)/y);
  const cases = fnNames.filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n)).flatMap((n) => {
    const labels = swiftArgumentLabels(code, n);
    const owner = owners.get(n);
    if (labels === undefined || owner === undefined) return [];
    const isStatic = new RegExp(String.raw`\b(?:static|class)\s+func\s+${n}\b`).test(code);
    const target = owner === null ? n : `${owner.path.join(".")}${isStatic ? "" : "()"}.${n}`;
    const args = labels.map((l, i) => `${l === "" ? "" : `${l}: `}rlpipeArg(rlpipeArgs, ${i})`).join(", ");
    return [`case ${JSON.stringify(n)}: rlpipeValue = ${target}(${args}) as Any`];
  });
  return { text: SWIFT_CALL_DRIVER.replace("__DISPATCH__", cases.join("\n")) };
}

/**
 * Julia: the function by name in Main, applied to the JSON arguments (parsed by the driver: Julia 1.5's standard
 * library has no JSON; homogeneous arrays get their element type, so methods typed Vector{Int} accept them), the value
 * written back as JSON by its type (arrays, tuples and sets as lists, dicts as objects, nothing as null).
 */
export const JULIA_CALL_DRIVER = String.raw`
# ---- rlpipe function-call driver (Julia): arguments from .rlpipe-call.json, the value as JSON on descriptor 3 ----
function rlpipe_parse(t::String)
    b = Vector{UInt8}(t)
    p = 1
    ws() = while p <= length(b) && b[p] in (0x20, 0x09, 0x0a, 0x0d); p += 1; end
    function str()
        io = IOBuffer(); p += 1
        while b[p] != UInt8('"')
            c = b[p]; p += 1
            if c != UInt8('\\'); write(io, c); continue; end
            e = Char(b[p]); p += 1
            if e == 'u'
                print(io, Char(parse(UInt16, String(b[p:p+3]), base=16))); p += 4
            else
                print(io, get(Dict('n' => '\n', 't' => '\t', 'r' => '\r', 'b' => '\b', 'f' => '\f'), e, e))
            end
        end
        p += 1
        return String(take!(io))
    end
    function val()
        ws()
        c = b[p]
        if c == UInt8('{')
            d = Dict{String,Any}(); p += 1; ws()
            if b[p] == UInt8('}'); p += 1; return d; end
            while true
                ws(); k = str(); ws(); p += 1; d[k] = val(); ws()
                c = b[p]; p += 1
                c == UInt8('}') && return d
            end
        elseif c == UInt8('[')
            a = Any[]; p += 1; ws()
            if b[p] == UInt8(']'); p += 1; return a; end
            while true
                push!(a, val()); ws()
                c = b[p]; p += 1
                # Homogeneous arrays get their element type (Vector{Int}, Vector{String}): typed methods accept them.
                c == UInt8(']') && return identity.(a)
            end
        elseif c == UInt8('"')
            return str()
        elseif c == UInt8('t'); p += 4; return true
        elseif c == UInt8('f'); p += 5; return false
        elseif c == UInt8('n'); p += 4; return nothing
        end
        q = p
        while p <= length(b) && b[p] in b"+-0123456789.eE"; p += 1; end
        s = String(b[q:p-1])
        return occursin(r"^-?[0-9]+$", s) ? something(tryparse(Int, s), parse(BigInt, s)) : parse(Float64, s)
    end
    return val()
end
rlpipe_json(io, x::Nothing) = print(io, "null")
rlpipe_json(io, x::Missing) = print(io, "null")
rlpipe_json(io, x::Bool) = print(io, x ? "true" : "false")
rlpipe_json(io, x::Integer) = print(io, x)
rlpipe_json(io, x::AbstractFloat) = !isfinite(x) ? print(io, "null") : isinteger(x) && abs(x) < 1e15 ? print(io, Int64(x), ".0") : print(io, repr(Float64(x)))
function rlpipe_json(io, x::AbstractString)
    print(io, '"')
    for c in x
        if c == '"' || c == '\\'; print(io, '\\', c)
        elseif c < ' '; print(io, "\\u", string(UInt16(c), base=16, pad=4))
        else print(io, c)
        end
    end
    print(io, '"')
end
rlpipe_json(io, x::AbstractChar) = rlpipe_json(io, string(x))
function rlpipe_json(io, x::Union{AbstractArray,Tuple,AbstractSet})
    print(io, '[')
    for (i, e) in enumerate(x); i > 1 && print(io, ','); rlpipe_json(io, e); end
    print(io, ']')
end
function rlpipe_json(io, x::AbstractDict)
    print(io, '{')
    for (i, (k, v)) in enumerate(x); i > 1 && print(io, ','); rlpipe_json(io, string(k)); print(io, ':'); rlpipe_json(io, v); end
    print(io, '}')
end
rlpipe_json(io, x) = rlpipe_json(io, string(x))
let call = rlpipe_parse(read(".rlpipe-call.json", String))
    f = getfield(Main, Symbol(call["fn"]))
    value = Base.invokelatest(f, call["args"]...)
    open("/dev/fd/3", "w") do io
        rlpipe_json(io, value)
    end
end
`;
