import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { eraseNullableAnnotations } from "../adapters/sandboxes/toolchains/csharp-nullable.js";

/** Erased characters become spaces: compare with the spaces squeezed, and check that length and lines are kept. */
function erased(src: string): string {
  const out = eraseNullableAnnotations(src);
  assert.equal(out.length, src.length);
  assert.equal(out.split("\n").length, src.split("\n").length);
  return out.replace(/ +/g, " ");
}

describe("C# nullable annotations erased for Mono's C# 7 compiler", () => {
  it("erases ? after reference types (keywords, arrays, generic classes, the program's classes, library classes)", () => {
    assert.equal(erased("string? line = Console.ReadLine();"), "string line = Console.ReadLine();");
    assert.equal(erased("static string? Find(object? o, int[]? xs) => null;"), "static string Find(object o, int[] xs) => null;");
    assert.equal(erased("List<int>? xs = null; Dictionary<string, List<int>?> d;"), "List<int> xs = null; Dictionary<string, List<int> > d;");
    assert.equal(erased("class Node { public Node? Next { get; set; } }\nNode? head;"), "class Node { public Node Next { get; set; } }\nNode head;");
    assert.equal(erased("var b = (StringBuilder?)null;"), "var b = (StringBuilder )null;");
    assert.equal(erased("System.String? s;"), "System.String s;");
  });

  it("keeps ? after value types: int?, the program's structs and enums, generic structs, tuples", () => {
    const kept = [
      "int? n = null; double? d; bool? b;",
      "struct P { } P? p = null;",
      "enum Color { Red } Color? c;",
      "KeyValuePair<int, int>? kv = null;",
      "(int, string)? t = null;",
      "record struct R(int X); R? r;",
      "DateTime? when;",
    ];
    for (const src of kept) assert.equal(eraseNullableAnnotations(src), src, src);
  });

  it("erases the null-forgiving ! and #nullable lines, but not negation, !=, ternaries, ?. or ??", () => {
    assert.equal(erased("var parts = Console.ReadLine()!.Split(' ');"), "var parts = Console.ReadLine() .Split(' ');");
    assert.equal(erased("string s = null!;\nvar x = d[k]!;"), "string s = null ;\nvar x = d[k] ;");
    assert.equal(erased("#nullable enable\nclass A { }\n  #nullable disable warnings"), " \nclass A { }\n ");
    const kept = [
      "if (!done && a != b) x = !y;",
      "var s = flag ? \"a\" : \"b\"; var t = flag? x : y;",
      "var n = name?.Length ?? 0; var m = arr?[0];",
      "var q = x is string ? 1 : 2;",
    ];
    for (const src of kept) assert.equal(eraseNullableAnnotations(src), src, src);
  });

  it("never touches strings, verbatim and interpolated strings, characters or comments", () => {
    const src = [
      "var a = \"string? x = y!;\"; // string? in a comment!",
      "var b = @\"C:\\path\"\"string? q;\"\"\"; /* object? o; */",
      "var c = $\"{(ok ? \"string? s;\" : \"n!;\")} string? t;\"; var ch = '!';",
      "string? real = null;",
    ].join("\n");
    const out = eraseNullableAnnotations(src);
    assert.equal(out.split("\n").slice(0, 3).join("\n"), src.split("\n").slice(0, 3).join("\n"));
    assert.equal(out.split("\n")[3], "string  real = null;");
  });
});
