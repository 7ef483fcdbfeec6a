#!/usr/bin/env python3
"""Extract request/response models from the vendors' official Python SDK wheels.

Writes test/vendor-models/<service>.json (functiongraph, iam, modelarts, scf, cam, tione) so the loopback fakes
can validate requests (unknown field, missing required field, wrong type, documented enum) and answer in the shape
of the response model. Only facts are extracted (operation routes, field names, types, required-ness as the SDK
encodes it, values and limits stated in the docstrings, error codes); no vendor code is copied.

    pip download --no-deps -d /tmp/vendor-sdks huaweicloudsdkfunctiongraph==3.1.219 ...   (see test/vendor-models/README.md)
    python3 scripts/vendor-models.py /tmp/vendor-sdks [--out test/vendor-models] [--check]

The wheels are read with zipfile (nothing is imported or executed). Standard library only; output is deterministic
(sorted keys, 2-space indent, trailing newline). With --check nothing is written; the exit status is 1 when a file
on disk differs from what would be generated.
"""

import argparse
import ast
import hashlib
import html
import json
import re
import sys
import zipfile
from pathlib import Path

GENERATED_BY = "scripts/vendor-models.py"

# What to extract. "operations" are the client calls whose request and response models are taken (Huawei: the
# client method's CamelCase name; Tencent: the API action); "models" are further roots. Every model they reference
# is included transitively.
SERVICES = [
    {
        "service": "functiongraph",
        "vendor": "huawei",
        "package": "huaweicloudsdkfunctiongraph",
        "version": "3.1.219",
        "module": "huaweicloudsdkfunctiongraph/v2",
        "client": "functiongraph_client.py",
        "operations": [
            "ListFunctions", "ShowFunctionConfig", "ShowFunctionCode", "CreateFunction", "UpdateFunctionCode",
            "UpdateFunctionConfig", "DeleteFunction", "ListFunctionTriggers", "ShowFunctionTrigger",
            "CreateFunctionTrigger", "UpdateTrigger", "DeleteFunctionTrigger", "BatchDeleteFunctionTriggers",
        ],
        "models": ["TriggerEventDataRequestBody", "TriggerEventDataResponseBody", "ApigTriggerFuncInfo", "OBSTriggerConfig"],
    },
    {
        "service": "iam",
        "vendor": "huawei",
        "package": "huaweicloudsdkiam",
        "version": "3.1.219",
        "module": "huaweicloudsdkiam/v3",
        "client": "iam_client.py",
        "operations": [
            "KeystoneListProjects", "KeystoneListAuthProjects", "KeystoneListAuthDomains", "ListAgencies",
            "ShowAgency", "CreateAgency", "DeleteAgency",
        ],
        "models": [],
    },
    {
        "service": "modelarts",
        "vendor": "huawei",
        "package": "huaweicloudsdkmodelarts",
        "version": "3.1.219",
        # The Python package names its module v1, but the training-job calls are the /v2/{project_id}/... API.
        "module": "huaweicloudsdkmodelarts/v1",
        "client": "modelarts_client.py",
        "operations": [
            "CreateTrainingJob", "ShowTrainingJobDetails", "ListTrainingJobs", "StopTrainingJob", "DeleteTrainingJob",
            "ShowTrainingJobFlavors", "ShowTrainingJobLogsPreview", "ListTrainingJobTasks", "ValidateTrainingJobName",
        ],
        "models": ["Job", "JobMetadata", "JobAlgorithm", "SpecResource", "JobResponse", "Status"],
    },
    {
        "service": "scf",
        "vendor": "tencent",
        "package": "tencentcloud-sdk-python-scf",
        "version": "3.1.100",
        "module": "tencentcloud/scf/v20180416",
        "client": "scf_client.py",
        "operations": [
            "CreateFunction", "UpdateFunctionCode", "UpdateFunctionConfiguration", "GetFunction", "ListFunctions",
            "DeleteFunction", "CreateTrigger", "UpdateTrigger", "UpdateTriggerStatus", "DeleteTrigger", "ListTriggers",
        ],
        "models": ["Trigger", "TriggerInfo", "Environment", "Variable"],
    },
    {
        "service": "cam",
        "vendor": "tencent",
        "package": "tencentcloud-sdk-python-cam",
        "version": "3.1.181",
        "module": "tencentcloud/cam/v20190116",
        "client": "cam_client.py",
        "operations": ["GetRole", "CreateRole", "AttachRolePolicy", "DescribeRoleList"],
        "models": ["RoleInfo"],
    },
    {
        "service": "tione",
        "vendor": "tencent",
        "package": "tencentcloud-sdk-python-tione",
        "version": "3.1.191",
        "module": "tencentcloud/tione/v20211111",
        "client": "tione_client.py",
        "operations": [
            "CreateTrainingTask", "DescribeTrainingTask", "DescribeTrainingTasks", "StopTrainingTask",
            "DeleteTrainingTask", "DescribeLogs", "DescribeBillingSpecs", "DescribeBillingSpecsPrice",
        ],
        "models": ["EnvVar", "ResourceConfigInfo", "CosPathInfo", "ImageInfo", "DataConfig", "CodeRepoConfig",
                   "StartCmdInfo", "TrainingTaskDetail", "TrainingTaskSetItem"],
    },
]

SCALARS = {
    "str": "string", "int": "integer", "long": "integer", "float": "number", "bool": "boolean",
    "object": "object", "datetime": "string", "date": "string",
}
FORMATS = {"datetime": "date-time", "date": "date"}


class Fail(Exception):
    pass


# ---------------------------------------------------------------------------------------------------------- wheels

def norm_dist(name):
    return re.sub(r"[-_.]+", "_", name).lower()


class Wheel:
    """One wheel, read in place (it is a zip); nothing from it is imported."""

    def __init__(self, path):
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())
        meta = next((n for n in sorted(self.names) if n.endswith(".dist-info/METADATA")), None)
        if meta is None:
            raise Fail(f"{path.name}: no METADATA")
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", self.text(meta), re.M))
        self.name, self.version = fields["Name"], fields["Version"]

    def text(self, name):
        if name not in self.names:
            raise Fail(f"{self.path.name}: no {name}")
        return self.zip.read(name).decode("utf-8")


def version_key(v):
    return tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.+-]", v))


def find_wheel(wheel_dir, cfg):
    """The wheel of cfg's package: the pinned version if present, else the closest one there is (recorded)."""
    want = norm_dist(cfg["package"])
    found = []
    for p in sorted(wheel_dir.iterdir()):
        if p.suffix == ".whl" and norm_dist(p.name.split("-")[0]) == want:
            found.append(Wheel(p))
    if not found:
        raise Fail(f"no wheel of {cfg['package']} in {wheel_dir} (pip download --no-deps -d {wheel_dir} "
                   f"{cfg['package']}=={cfg['version']})")
    exact = [w for w in found if w.version == cfg["version"]]
    if exact:
        return exact[0]
    target = version_key(cfg["version"])
    best = min(found, key=lambda w: (sum(abs(a - b) * 1000 ** (3 - i) for i, (a, b) in
                                         enumerate(zip(version_key(w.version), target))), w.version))
    print(f"note: {cfg['package']} {cfg['version']} not in {wheel_dir}; using {best.version}", file=sys.stderr)
    return best


# ------------------------------------------------------------------------------------------------------ doc text

NULLABLE_RE = re.compile(r"注意：此字段可能返回\s*null，表示取不到有效值。?")
LIMIT_RE = re.compile(
    r"最多|最大|最小|最长|最短|不超过|不能超过|不得超过|不大于|不小于|不少于|范围|长度|字符|字节|必须|不支持|仅支持|只支持|"
    r"只能|不能|不允许|不可|限制|上限|下限|至少|应与|同时|二选一|必填|唯一|不区分|区分大小写|格式|正则|默认|"
    r"\b(?:maximum|minimum|must|only|at most|up to|length|limit|characters|bytes|default)\b", re.I)


def clean(text):
    """Docstring text → plain one-line text (entities decoded, HTML tags and Markdown links reduced)."""
    if not text:
        return ""
    t = html.unescape(html.unescape(text))
    t = t.replace('\\"', '"').replace("\\'", "'")
    t = re.sub(r"([^。.！？!?\s])\s*</p>\s*<p>", r"\1。", t)
    t = re.sub(r"<br\s*/?>|</p>\s*<p>|</li>|</?ul>|</?ol>", " ", t)
    t = re.sub(r"<li>", " - ", t)
    t = re.sub(r"<[^>]+>", "", t)
    t = re.sub(r"\[([^\]]*)\]\((?:https?://[^)]*)\)", r"\1", t)
    t = t.replace("**", "")
    return re.sub(r"\s+", " ", t).strip()


def sentences(text):
    """Split on sentence ends and list bullets; keeps each piece's text."""
    parts = re.split(r"(?<=[。；！？])|(?<=[.;!?])\s+|\s+-\s+|\s*\n\s*", text)
    return [p.strip(" ;；") for p in parts if p and p.strip(" ;；-")]


def first_sentence(text, limit=200):
    if not text:
        return ""
    m = re.search(r"[。！？]|[.!?](?=\s|$)", text)
    s = text[: m.end()] if m else text
    s = s.strip()
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def limits_of(text, doc):
    out = []
    for s in sentences(text):
        if s in doc or not LIMIT_RE.search(s) or re.fullmatch(r"不涉及。?", s):
            continue
        s = s if len(s) <= 300 else s[:299].rstrip() + "…"
        if s not in out:
            out.append(s)
    return out[:8]


STRUCTURED_RE = re.compile(r"(参数解释|约束限制|取值范围|默认取值)[：:]")


def describe(raw):
    """Docstring of one field → ({doc, limits?, default?, nullable?}, text to look for values in); Huawei's
    structured **参数解释**/**约束限制**/**取值范围**/**默认取值** form is split into its parts."""
    text = clean(raw)
    out = {}
    if NULLABLE_RE.search(text):
        out["nullable"] = True
        text = NULLABLE_RE.sub("", text).strip()
    if STRUCTURED_RE.search(text):
        pieces = {}
        for key, body in re.findall(r"(参数解释|约束限制|取值范围|默认取值)[：:](.*?)(?=(?:参数解释|约束限制|取值范围|默认取值)[：:]|$)", text):
            pieces.setdefault(key, body.strip())
        doc = first_sentence(pieces.get("参数解释", "") or text)
        lim = []
        for key in ("约束限制", "取值范围"):
            v = pieces.get(key, "")
            if v and not re.fullmatch(r"不涉及。?", v):
                lim.append(f"{key}：{v}" if len(v) <= 600 else f"{key}：{v[:599]}…")
        dflt = pieces.get("默认取值", "")
        if dflt and not re.fullmatch(r"不涉及。?", dflt):
            out["default"] = dflt
        out["doc"] = doc
        if lim:
            out["limits"] = lim
        rng = pieces.get("取值范围", "")
        # Values are looked for in the 取值范围 part when there is one (the 约束限制 part often repeats them).
        return out, (f"取值范围： {rng}" if rng and not re.fullmatch(r"不涉及。?", rng) else text)
    doc = first_sentence(text)
    out["doc"] = doc
    lim = limits_of(text, doc)
    if lim:
        out["limits"] = lim
    return out, text


TOKEN = r"[A-Za-z0-9][A-Za-z0-9_.\-:*$]*"


def enum_of(text, base):
    """Values the docstring lists explicitly for a string/integer field, or None. Only unambiguous forms count:
    a bullet list "- VALUE：meaning" (two or more), "取值有N种 …" with exactly N "VALUE:" items, inline
    "取值为/可选值为/枚举值/取值范围[为]：A、B、C" or "取A、B或C" lists, and "A表示… B表示…" (two or more).
    Examples ("eg：…", "如：…") and "目前支持 a、b" lists never count."""
    if base not in ("string", "integer"):
        return None
    vals = None
    bullets = re.findall(r"(?:^|\s)-\s*(" + TOKEN + r")\s*[：:]", text)
    if len(bullets) >= 2:
        vals = bullets
    if vals is None:
        m = re.search(r"取值有(\d+)种", text)
        if m:
            items = re.findall(r"(?:^|[\s。，,])(" + TOKEN + r")\s*[：:]\s", text[m.end():] + " ")
            if len(items) == int(m.group(1)):
                vals = items
    if vals is None:
        item = r"[\"“'「]?" + TOKEN + r"[\"”'」]?(?:\s*[（(][^）)]*[）)])?"
        sep = r"\s*(?:,|，|、|/|\||或|和)\s*"
        m = re.search(r"(取值为|取值：|取值:|可选值为|可选值：|可选值:|可选值|枚举值为|枚举值：|枚举值:|取值范围为|取值范围：|取值范围:|取值范围)\s*[：:]?\s*"
                      r"(" + item + r"(?:" + sep + item + r")+)", text)
        # "取值为A或B表示…，取值为24表示…" describes values, it does not close the list: only one lead may occur.
        if m and text.count(m.group(1)[:2]) == 1:
            vals = [re.sub(r"\s*[（(][^）)]*[）)]$", "", v).strip("\"“”'「」") for v in re.split(sep, m.group(2))]
    if vals is None:
        m = re.search(r"(?:^|[\s，,])取\s*((?:" + TOKEN + r")(?:\s*(?:,|，|、|或|和)\s*(?:" + TOKEN + r"))+)", text)
        if m:
            vals = re.split(r"\s*(?:,|，|、|或|和)\s*", m.group(1))
    if vals is None:
        meaning = re.findall(r"(?:^|\s)(" + TOKEN + r")\s*表示", text)
        if len(meaning) >= 2:
            vals = meaning
    if not vals:
        return None
    vals = [v.rstrip(".:：") for v in vals]
    if base == "integer":
        if not all(re.fullmatch(r"-?\d+", v) for v in vals):
            return None
        vals = [int(v) for v in vals]
    elif any(re.fullmatch(r"\d+(?:\.\d+)?", v) for v in vals) and not all(re.fullmatch(r"-?\d+", v) for v in vals):
        return None
    uniq = []
    for v in vals:
        if v not in uniq:
            uniq.append(v)
    return uniq if len(uniq) >= 2 else None


# ------------------------------------------------------------------------------------------------------- types

def norm_huawei_type(t, known):
    t = t.strip()
    m = re.fullmatch(r"list\[(.*)\]", t)
    if m:
        return f"array<{norm_huawei_type(m.group(1), known)}>"
    m = re.fullmatch(r"dict\(\s*str\s*,\s*(.*)\)", t)
    if m:
        return f"map<string,{norm_huawei_type(m.group(1), known)}>"
    if t in SCALARS:
        return SCALARS[t]
    if re.fullmatch(r"[A-Z]\w*", t):
        known.add(t)
        return t
    raise Fail(f"unknown SDK type {t!r}")


def norm_tencent_type(t, known):
    t = t.strip()
    m = re.fullmatch(r":class:`[\w.]*\.(\w+)`", t)
    if m:
        known.add(m.group(1))
        return m.group(1)
    m = re.fullmatch(r"list of (.*?)(?: non-negative)?", t)
    if m:
        return f"array<{norm_tencent_type(m.group(1), known)}>"
    if t in SCALARS:
        return SCALARS[t]
    if re.fullmatch(r"[A-Z]\w*", t):
        known.add(t)
        return t
    raise Fail(f"unknown SDK type {t!r}")


def base_of(t):
    while t.startswith("array<"):
        t = t[len("array<"):-1]
    return t


# ------------------------------------------------------------------------------------------------------- Huawei

def huawei_param_docs(doc):
    """':param x: text' blocks of an __init__ docstring → {x: text}."""
    out, cur = {}, None
    for line in (doc or "").splitlines():
        m = re.match(r"\s*:param (\w+):\s?(.*)$", line)
        if m:
            cur = m.group(1)
            out[cur] = m.group(2)
            continue
        if re.match(r"\s*:(type|rtype|return)\b", line):
            cur = None
            continue
        if cur is not None:
            out[cur] += "\n" + line
    return out


class HuaweiModels:
    def __init__(self, wheel, cfg):
        self.wheel, self.cfg = wheel, cfg
        self.mod = cfg["module"]
        init = wheel.text(f"{self.mod}/model/__init__.py")
        pkg = self.mod.replace("/", ".")
        self.where = {cls: f"{self.mod}/model/{name}.py" for name, cls in
                      re.findall(r"^from " + re.escape(pkg) + r"\.model\.(\w+) import (\w+)$", init, re.M)}
        self.cache = {}

    def has(self, name):
        return name in self.where

    def parse(self, name):
        if name in self.cache:
            return self.cache[name]
        if name not in self.where:
            raise Fail(f"{self.cfg['package']}: no model {name}")
        tree = ast.parse(self.wheel.text(self.where[name]))
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        consts = {}
        init = None
        for n in cls.body:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                if n.targets[0].id in ("openapi_types", "attribute_map", "sensitive_list"):
                    consts[n.targets[0].id] = ast.literal_eval(n.value)
            if isinstance(n, ast.FunctionDef) and n.name == "__init__":
                init = n
        # Required-ness as the SDK encodes it: the generated __init__ assigns a required property unconditionally
        # (`self.x = x`) and an optional one under `if x is not None:`.
        unconditional = set()
        for st in init.body if init else []:
            if isinstance(st, ast.Assign):
                for tg in st.targets:
                    if (isinstance(tg, ast.Attribute) and isinstance(tg.value, ast.Name) and tg.value.id == "self"
                            and not tg.attr.startswith("_")):
                        unconditional.add(tg.attr)
        info = {
            "types": consts.get("openapi_types", {}),
            "wire": consts.get("attribute_map", {}),
            "sensitive": set(consts.get("sensitive_list", [])),
            "required": unconditional,
            "docs": huawei_param_docs(ast.get_docstring(init, clean=False) if init else ""),
            "response": any(isinstance(b, ast.Name) and b.id in ("SdkResponse", "SdkStreamResponse") for b in cls.bases),
            "stream": any(isinstance(b, ast.Name) and b.id == "SdkStreamResponse" for b in cls.bases),
            "file": self.where[name],
        }
        self.cache[name] = info
        return info

    def operations(self):
        src = self.wheel.text(f"{self.mod}/{self.cfg['client']}")
        ops = {}
        for m in re.finditer(r"    def _(\w+)_http_info\(cls, request\):\n(.*?)\n        return http_info", src, re.S):
            name = "".join(p[:1].upper() + p[1:] for p in m.group(1).split("_"))
            body = m.group(2)

            def one(pattern):
                mm = re.search(pattern, body)
                return mm.group(1) if mm else None

            resp = one(r'"response_type": "(\w+)"')
            op = {
                "method": one(r'"method": "(\w+)"'),
                "path": one(r'"resource_path": "([^"]+)"'),
                "request": resp[: -len("Response")] + "Request" if resp and resp.endswith("Response") else None,
                "response": resp,
                "pathParams": dict(re.findall(r"path_params\['([^']+)'\] = local_var_params\['(\w+)'\]", body)),
                "queryParams": dict(re.findall(r"query_params\.append\(\('([^']+)', local_var_params\['(\w+)'\]\)\)", body)),
                "headerParams": dict(re.findall(r"header_params\['([^']+)'\] = local_var_params\['(\w+)'\]", body)),
                "body": bool(re.search(r"body = local_var_params\['body'\]", body)),
                "responseHeaders": re.findall(r'"([^"]+)"', one(r"response_headers = \[([^\]]*)\]") or ""),
                "contentType": (re.findall(r"'([^']+)'", one(r"select_header_content_type\(\s*\[([^\]]*)\]\)") or "") or [None])[0],
            }
            ops[name] = op
        return ops

    def model_json(self, name, refs, op_for_request=None, op_for_response=None):
        info = self.parse(name)
        fields = {}
        for attr, typ in info["types"].items():
            wire = info["wire"].get(attr, attr)
            t = norm_huawei_type(typ, refs)
            desc, text = describe(info["docs"].get(attr, ""))
            f = {"type": t, "required": attr in info["required"], **desc}
            if typ in FORMATS:
                f["format"] = FORMATS[typ]
            if attr in info["sensitive"]:
                f["sensitive"] = True
            e = enum_of(text, base_of(t))
            if e:
                f["enum"] = e
            if op_for_request is not None:
                loc = None
                if attr in op_for_request["pathParams"].values():
                    loc, wire = "path", next(k for k, v in op_for_request["pathParams"].items() if v == attr)
                elif attr in op_for_request["queryParams"].values():
                    loc, wire = "query", next(k for k, v in op_for_request["queryParams"].items() if v == attr)
                elif attr in op_for_request["headerParams"].values():
                    loc, wire = "header", next(k for k, v in op_for_request["headerParams"].items() if v == attr)
                elif attr == "body" and op_for_request["body"]:
                    loc = "body"
                if loc:
                    f["in"] = loc
            if op_for_response is not None:
                if wire in op_for_response["responseHeaders"]:
                    f["in"] = "header"
                elif wire == "body":
                    f["in"] = "body"
            fields[wire] = f
        out = {"fields": fields, "file": info["file"].split("/", 1)[1]}
        if info["response"]:
            out["kind"] = "response"
        return out


# ------------------------------------------------------------------------------------------------------ Tencent

class TencentModels:
    def __init__(self, wheel, cfg):
        self.wheel, self.cfg = wheel, cfg
        self.mod = cfg["module"]
        self.src = wheel.text(f"{self.mod}/models.py")
        self.tree = ast.parse(self.src)
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}

    def has(self, name):
        return name in self.classes

    def parse(self, name):
        if name not in self.classes:
            raise Fail(f"{self.cfg['package']}: no model {name}")
        cls = self.classes[name]
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        doc = ast.get_docstring(init, clean=False) if init else ""
        fields, cur = [], None
        for line in (doc or "").splitlines():
            m = re.match(r"\s*:param _?(\w+):\s?(.*)$", line)
            if m:
                cur = {"name": m.group(1), "doc": m.group(2), "type": None}
                fields.append(cur)
                continue
            m = re.match(r"\s*:type (\w+):\s*(.*)$", line)
            if m:
                if cur is None or cur["name"] != m.group(1):
                    raise Fail(f"{name}: :type {m.group(1)} without its :param")
                cur["type"] = m.group(2).strip()
                cur = None
                continue
            if cur is not None:
                cur["doc"] += "\n" + line
        # The wire names are the keys _deserialize reads; they must match the documented ones.
        deser = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_deserialize"), None)
        read = set(re.findall(r'params\.get\("(\w+)"\)', ast.get_source_segment(self.src, deser) or "")) if deser else set()
        documented = {f["name"] for f in fields}
        if read and read != documented:
            raise Fail(f"{name}: documented fields {sorted(documented ^ read)} differ from those _deserialize reads")
        summary = clean(ast.get_docstring(cls, clean=False) or "")
        return {"fields": fields, "summary": summary}

    def operations(self):
        src = self.wheel.text(f"{self.mod}/{self.cfg['client']}")
        head = {k: v for k, v in re.findall(r"^    _(apiVersion|endpoint|service) = '([^']*)'", src, re.M)}
        ops = {}
        for m in re.finditer(r'    def (\w+)\(self, request\):.*?self\.call\("(\w+)", params.*?models\.(\w+)\(\)', src, re.S):
            method, action, resp = m.groups()
            ops[action] = {"action": action, "request": method + "Request", "response": resp,
                           "version": head.get("apiVersion"), "endpoint": head.get("endpoint")}
        return ops, head

    def model_json(self, name, refs, response=False):
        info = self.parse(name)
        fields = {}
        for fd in info["fields"]:
            if fd["type"] is None:
                raise Fail(f"{name}.{fd['name']}: no :type")
            t = norm_tencent_type(fd["type"], refs)
            desc, text = describe(fd["doc"])
            # The Python SDK does not encode required-ness (API docs' 是否必填 is not in the package).
            f = {"type": t, "required": None, **desc}
            e = enum_of(text, base_of(t))
            if e:
                f["enum"] = e
            fields[fd["name"]] = f
        out = {"fields": fields, "file": "models.py"}
        if response:
            out["kind"] = "response"
        return out


def tencent_errors(wheel, cfg):
    src = wheel.text(f"{cfg['module']}/errorcodes.py")
    out = {}
    for comment, code in re.findall(r"((?:^#[^\n]*\n)+)^[A-Z0-9_]+ = '([^']+)'", src, re.M):
        lines = [ln.lstrip("#").strip() for ln in comment.strip().splitlines()]
        out[code] = clean(" ".join(ln for ln in lines if ln))
    if not out:
        raise Fail(f"{cfg['package']}: no error codes parsed")
    return out


# ------------------------------------------------------------------------------------------------------ service

def closure(roots, model_json):
    models, todo = {}, list(roots)
    while todo:
        name, kw = todo.pop(0)
        if name in models:
            continue
        refs = set()
        models[name] = model_json(name, refs, **kw)
        todo.extend((r, {}) for r in sorted(refs) if r not in models)
    return models


def build_huawei(wheel, cfg):
    hm = HuaweiModels(wheel, cfg)
    all_ops = hm.operations()
    ops, roots = {}, []
    for name in cfg["operations"]:
        if name not in all_ops:
            raise Fail(f"{cfg['package']}: the client has no operation {name}")
        op = all_ops[name]
        for side in ("request", "response"):
            if not hm.has(op[side]):
                raise Fail(f"{cfg['package']}: {name}: no model {op[side]}")
        roots.append((op["request"], {"op_for_request": op}))
        roots.append((op["response"], {"op_for_response": op}))
        entry = {"method": op["method"], "path": op["path"], "request": op["request"], "response": op["response"]}
        req = hm.parse(op["request"])
        body_model = req["types"].get("body") if op["body"] else None
        if body_model:
            entry["requestBody"] = norm_huawei_type(body_model, set())
        resp = hm.parse(op["response"])
        if resp["stream"]:
            entry["responseBody"] = "stream"
        elif "body" in resp["wire"].values():
            attr = next(k for k, v in resp["wire"].items() if v == "body")
            entry["responseBody"] = norm_huawei_type(resp["types"][attr], set())
        if op["queryParams"]:
            entry["query"] = sorted(op["queryParams"])
        if op["responseHeaders"]:
            entry["responseHeaders"] = op["responseHeaders"]
        if op["contentType"]:
            entry["contentType"] = op["contentType"]
        ops[name] = entry
    for m in cfg["models"]:
        if not hm.has(m):
            raise Fail(f"{cfg['package']}: no model {m}")
        roots.append((m, {}))
    models = closure(roots, hm.model_json)
    errors = {
        "codes": {},
        "note": ("The Huawei SDK carries no catalogue of this service's error codes (no errorcodes module and no "
                 "code list in the model docstrings). huaweicloudsdkcore 3.1.219 (exceptions/exception_handler.py, read "
                 "by hand; not one of the extracted wheels) reads an error body's code and message from "
                 "error_code/error_msg, else errorCode/errorMsg, else code/message (also one level down, e.g. "
                 "{\"error\": {\"code\", \"message\"}}), and the request id from the X-Request-Id header."),
    }
    return ops, models, errors, {}


def build_tencent(wheel, cfg):
    tm = TencentModels(wheel, cfg)
    all_ops, head = tm.operations()
    ops, roots = {}, []
    for name in cfg["operations"]:
        if name not in all_ops:
            raise Fail(f"{cfg['package']}: the client has no action {name}")
        op = all_ops[name]
        for side in ("request", "response"):
            if not tm.has(op[side]):
                raise Fail(f"{cfg['package']}: {name}: no model {op[side]}")
        roots.append((op["request"], {}))
        roots.append((op["response"], {"response": True}))
        ops[name] = {"action": name, "request": op["request"], "response": op["response"]}
    for m in cfg["models"]:
        if not tm.has(m):
            raise Fail(f"{cfg['package']}: no model {m}")
        roots.append((m, {}))
    models = closure(roots, tm.model_json)
    errors = {"codes": tencent_errors(wheel, cfg), "source": f"{cfg['module'].split('/', 1)[1]}/errorcodes.py"}
    api = {"version": head.get("apiVersion"), "endpoint": head.get("endpoint"), "service": head.get("service"),
           "protocol": ("POST / with X-TC-Action and X-TC-Version headers, request fields as the JSON body; the "
                        "reply is {\"Response\": {...fields, \"RequestId\"}} and an error is "
                        "{\"Response\": {\"Error\": {\"Code\", \"Message\"}, \"RequestId\"}}")}
    return ops, models, errors, api


NOTES = {
    "huawei": [
        "required: true/false is what the generated SDK encodes: its __init__ assigns a required property "
        "unconditionally and an optional one only when not None. Response classes (kind: response) are generated "
        "with every property optional, so required is false there even for fields the service always returns.",
        "Field keys are wire names (attribute_map). 'in' marks a request field that is a path/query/header "
        "parameter, or the field that IS the whole HTTP body ('in': 'body'); fields without 'in' are members of "
        "the JSON body. In responses, 'in': 'header' is a response header and 'in': 'body' means the whole JSON "
        "body (e.g. a bare array) is that field's value.",
    ],
    "tencent": [
        "required is null everywhere: the Python SDK does not encode required-ness (the API reference's "
        "'是否必填' column is not in the package). The few docstrings that say '必填' conditionally are kept "
        "in 'limits'.",
        "nullable: true marks fields whose docstring says '注意：此字段可能返回 null，表示取不到有效值。'.",
        "Request models are the JSON body of POST /; response models are the object inside {\"Response\": ...}.",
    ],
    "common": [
        "Types: string, integer, number, boolean, object, array<T>, map<string,T>, or a model name defined in "
        "'models'. format: date-time/date marks the SDK's datetime/date (sent as strings).",
        "doc is the docstring's first sentence (≤200 chars). limits are the docstring's sentences that state a "
        "limit, rule or default (Huawei's structured 约束限制/取值范围 parts verbatim). enum is a list of values the "
        "docstring enumerates explicitly (for arrays: the item values); it is prose-derived, not enforced by the "
        "SDK, and may be incomplete: enumIncomplete says where another model of the same SDK lists more values for "
        "the same field (see also the README).",
    ],
}


def mark_incomplete_enums(models):
    """Where the same wire field in another model of the same SDK lists more values (a strict superset), the
    shorter list is shown to be incomplete by the SDK itself: say so next to it."""
    seen = {}
    for mname, m in models.items():
        for fname, f in m["fields"].items():
            if "enum" in f:
                seen.setdefault(fname, []).append((mname, f["enum"]))
    for mname, m in models.items():
        for fname, f in m["fields"].items():
            if "enum" not in f:
                continue
            mine = set(map(str, f["enum"]))
            for other, vals in sorted(seen[fname]):
                extra = [v for v in vals if str(v) not in mine]
                if other != mname and extra and mine < set(map(str, vals)):
                    f["enumIncomplete"] = f"{other}.{fname} in the same SDK also lists: {', '.join(map(str, extra))}"
                    break


def build(cfg, wheel_dir):
    wheel = find_wheel(wheel_dir, cfg)
    if cfg["vendor"] == "huawei":
        ops, models, errors, api = build_huawei(wheel, cfg)
    else:
        ops, models, errors, api = build_tencent(wheel, cfg)
    mark_incomplete_enums(models)
    doc = {
        "sdk": {"package": cfg["package"], "version": wheel.version, "source": "PyPI", "wheel": wheel.path.name,
                "sha256": hashlib.sha256(wheel.path.read_bytes()).hexdigest(), "module": cfg["module"]},
        "generatedBy": GENERATED_BY,
        "notes": NOTES[cfg["vendor"]] + NOTES["common"],
        "operations": ops,
        "models": models,
        "errors": errors,
    }
    if wheel.version != cfg["version"]:
        doc["sdk"]["requested"] = cfg["version"]
    if api:
        doc["api"] = api
    return doc


def render(doc):
    return json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel_dir", type=Path, help="directory holding the downloaded wheels (pip download --no-deps)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "test" / "vendor-models")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would change")
    ap.add_argument("--only", action="append", help="only this service (repeatable)")
    args = ap.parse_args(argv)
    if not args.wheel_dir.is_dir():
        print(f"{args.wheel_dir}: not a directory", file=sys.stderr)
        return 2
    stale = []
    for cfg in SERVICES:
        if args.only and cfg["service"] not in args.only:
            continue
        try:
            text = render(build(cfg, args.wheel_dir))
        except Fail as e:
            print(f"{cfg['service']}: {e}", file=sys.stderr)
            return 2
        path = args.out / f"{cfg['service']}.json"
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        doc = json.loads(text)
        print(f"{path}: {doc['sdk']['package']} {doc['sdk']['version']}, {len(doc['operations'])} operations, "
              f"{len(doc['models'])} models, {len(doc['errors']['codes'])} error codes")
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
