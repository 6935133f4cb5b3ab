"""The Terraform side of tests/deploy: the module's .tf files read with python-hcl2 and evaluated for concrete
variables (the subset of HCL the module uses), and the IAM statements each role gets."""

from __future__ import annotations

import json
import os
import re
import sys

from iac_common import MODULE, Unsupported, _as_list

# python-hcl2 and checkov's fork of it (bc-python-hcl2) both install a module named `hcl2`; python-hcl2 is
# installed into its own directory of .venv-deploy (see the Makefile) and put first on the path here.
_HCL2_DIR = os.environ.get("HUDI_SINK_HCL2_PATH")
if _HCL2_DIR and _HCL2_DIR not in sys.path:
    sys.path.insert(0, _HCL2_DIR)
import hcl2  # noqa: E402

# ----------------------------------------------------------------------------------------------- Terraform


def load_module(files: dict[str, str] | None = None) -> dict:
    """Merged python-hcl2 view of the module's .tf files (`files`: name -> text overrides the directory)."""
    if files is None:
        files = {p.name: p.read_text() for p in sorted(MODULE.glob("*.tf"))}
    merged: dict[str, list] = {}
    for name, text in sorted(files.items()):
        for key, value in hcl2.loads(text).items():
            merged.setdefault(key, []).extend(value)
    return merged


def unquote(s):
    if isinstance(s, str) and len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1]
    return s


def blocks(module: dict, kind: str) -> dict:
    """{(type, name): body} of `resource` / `data` blocks, or {name: body} for variable/output."""
    out = {}
    for entry in module.get(kind, []):
        for k1, v1 in entry.items():
            if kind in ("resource", "data"):
                for k2, body in v1.items():
                    out[(unquote(k1), unquote(k2))] = body
            else:
                out[unquote(k1)] = v1
    return out


_TOKEN = re.compile(
    r"""\s*(?:(?P<num>\d+)|(?P<str>"(?:[^"\\]|\\.)*")|(?P<op>==|!=|&&|\|\||>=|<=|[?:!()\[\],.><{}=])|(?P<id>[A-Za-z_][A-Za-z0-9_-]*))"""
)


def _string_end(expr: str, pos: int) -> int:
    """Index after the HCL string literal starting at expr[pos] == '"' (interpolations may nest strings)."""
    i = pos + 1
    while i < len(expr):
        ch = expr[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1
        if expr.startswith("${", i):
            depth, i = 1, i + 2
            while depth:
                if i >= len(expr):
                    raise Unsupported(f"unterminated interpolation in {expr!r}")
                if expr[i] == '"':
                    i = _string_end(expr, i)
                    continue
                depth += {"{": 1, "}": -1}.get(expr[i], 0)
                i += 1
            continue
        i += 1
    raise Unsupported(f"unterminated string in {expr!r}")


def _tokens(expr: str):
    pos, out = 0, []
    expr = expr.strip()
    while pos < len(expr):
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
        if expr[pos] == '"':
            end = _string_end(expr, pos)
            out.append(("str", expr[pos:end]))
            pos = end
            continue
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise Unsupported(f"cannot tokenise {expr[pos:]!r} in {expr!r}")
        pos = m.end()
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
    return out


class TfEvaluator:
    """Evaluates the expressions of the module for concrete variable values (a small subset of HCL)."""

    def __init__(self, module: dict, variables: dict, account: str, region: str, partition: str = "aws"):
        self.m = module
        self.vars = {}
        declared = blocks(module, "variable")
        for name, spec in declared.items():
            if name in variables:
                self.vars[name] = variables[name]
            elif "default" in spec:
                self.vars[name] = self.value(spec["default"])
            else:
                raise KeyError(f"variable {name} has no default and no value")
        unknown = set(variables) - set(declared)
        if unknown:
            raise KeyError(f"unknown variables {sorted(unknown)}")
        self.locals_src = {}
        for entry in module.get("locals", []):
            self.locals_src.update(entry)
        self.locals: dict = {}
        self.resources = blocks(module, "resource")
        self.data = blocks(module, "data")
        self.account, self.region, self.partition = account, region, partition
        self.scope: dict = {}  # for-expression variables
        self.each = None  # each.key of the for_each instance being evaluated

    def instances(self, body) -> list:
        """The keys of a for_each resource (sorted, as Terraform orders a set), or [None]."""
        if "for_each" not in body:
            return [None]
        keys = self.value(body["for_each"])
        return sorted(keys.keys() if isinstance(keys, dict) else keys)

    # -- values as python-hcl2 gives them: '"literal ${interp}"', '${expr}', numbers, lists, dicts
    def value(self, v):
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {unquote(k): self.value(x) for k, x in v.items() if not k.startswith("__")}
        if not isinstance(v, str):
            return v
        heredoc = re.fullmatch(r'"<<(-?)(\w+)\n(.*)\n\s*\2"', v, re.S)
        if heredoc:
            lines = heredoc.group(3).split("\n")
            if heredoc.group(1):
                indent = min(len(x) - len(x.lstrip()) for x in lines if x.strip())
                lines = [x[indent:] for x in lines]
            return self.template("\n".join(lines) + "\n")
        if v.startswith("${") and v.endswith("}") and _balanced(v[2:-1]):
            return self.expr(v[2:-1])
        if v.startswith('"') and v.endswith('"'):
            return self.template(v[1:-1])
        if v in ("true", "false"):
            return v == "true"
        if re.fullmatch(r"-?\d+", v):
            return int(v)
        return self.expr(v)

    def template(self, text: str) -> str:
        out, i = [], 0
        while i < len(text):
            j = text.find("${", i)
            if j < 0:
                out.append(_unescape(text[i:]))
                break
            out.append(_unescape(text[i:j]))
            depth, k = 1, j + 2
            while depth:
                if k >= len(text):
                    raise Unsupported(f"unbalanced template {text!r}")
                depth += {"{": 1, "}": -1}.get(text[k], 0)
                k += 1
            out.append(str(self.expr(text[j + 2 : k - 1])))
            i = k
        return "".join(out)

    def expr(self, text: str):
        toks = _tokens(text)
        parser = _Parser(toks, self)
        result = parser.ternary()
        if parser.i != len(toks):
            raise Unsupported(f"trailing tokens in {text!r}")
        return result

    def local(self, name: str):
        if name not in self.locals:
            if name not in self.locals_src:
                raise Unsupported(f"local.{name}")
            self.locals[name] = self.value(self.locals_src[name])
        return self.locals[name]

    def resource_attr(self, rtype: str, rname: str, index, attr: str):
        body = self.resources.get((rtype, rname))
        if body is None:
            raise Unsupported(f"resource {rtype}.{rname}")
        if "count" in body:
            count = self.value(body["count"])
            if index is None or index >= count:
                raise Unsupported(f"{rtype}.{rname}[{index}] with count {count}")
        if "for_each" in body and index not in self.instances(body):
            raise Unsupported(f"{rtype}.{rname}[{index!r}]: no such for_each instance")
        if rtype == "aws_lambda_event_source_mapping" and attr == "uuid":
            outer, self.each = self.each, index
            try:
                (topic,) = self.value(body["topics"])
            finally:
                self.each = outer
            return f"<event-source-mapping:{topic}>"
        p, r, a = self.partition, self.region, self.account
        arg = lambda key: self.value(body[key])  # noqa: E731
        if rtype == "aws_s3_bucket":
            return {"id": arg("bucket"), "bucket": arg("bucket"), "arn": f"arn:{p}:s3:::{arg('bucket')}"}[attr]
        if rtype == "aws_dynamodb_table":
            return {"name": arg("name"), "id": arg("name"), "arn": f"arn:{p}:dynamodb:{r}:{a}:table/{arg('name')}"}[attr]
        if rtype == "aws_cloudwatch_log_group":
            # Terraform's log group arn has no ":*" suffix (CloudFormation's has).
            return {"name": arg("name"), "arn": f"arn:{p}:logs:{r}:{a}:log-group:{arg('name')}"}[attr]
        if rtype == "aws_lambda_function":
            fn = arg("function_name")
            return {"function_name": fn, "arn": f"arn:{p}:lambda:{r}:{a}:function:{fn}"}[attr]
        if rtype == "aws_iam_role":
            return {"arn": f"arn:{p}:iam::{a}:role/{arg('name')}", "id": arg("name"), "name": arg("name")}[attr]
        if rtype == "aws_sns_topic":
            return {"arn": f"arn:{p}:sns:{r}:{a}:{arg('name')}", "name": arg("name")}[attr]
        if rtype == "aws_kms_key":
            return {"arn": f"arn:{p}:kms:{r}:{a}:key/<{rname}>"}[attr]
        if rtype == "aws_cloudwatch_dashboard":
            return {"dashboard_name": arg("dashboard_name")}[attr]
        raise Unsupported(f"attribute {attr} of {rtype}")

    def resource_exists(self, rtype: str, rname: str) -> bool:
        body = self.resources[(rtype, rname)]
        return "count" not in body or self.value(body["count"]) > 0

    def reference(self, path: list):
        head = path[0]
        if len(path) == 1 and head in self.scope:
            return self.scope[head]
        if path == ["each", "key"] or path == ["each", "value"]:
            if self.each is None:
                raise Unsupported("each outside a for_each resource")
            return self.each
        if head == "var":
            return self.vars[path[1]]
        if head == "local":
            return self.local(path[1])
        if head == "data":
            key = ".".join(str(x) for x in path[1:])
            known = {
                "aws_partition.current.partition": self.partition,
                "aws_region.current.region": self.region,
                "aws_caller_identity.current.account_id": self.account,
            }
            if key in known:
                return known[key]
            raise Unsupported(f"data.{key}")
        if head in ("path", "each", "count", "module"):
            raise Unsupported(".".join(map(str, path)))
        rtype, rname, rest = path[0], path[1], path[2:]
        index = None
        if rest and (isinstance(rest[0], int) or (len(rest) == 2 and "for_each" in self.resources.get((rtype, rname), {}))):
            index, rest = rest[0], rest[1:]
        if len(rest) != 1:
            raise Unsupported(".".join(map(str, path)))
        return self.resource_attr(rtype, rname, index, rest[0])


def _unescape(s: str) -> str:
    """The HCL escapes \\n, \\t, \\" and \\\\ of a string literal's text (others are left as written)."""
    return re.sub(r'\\(["\\nt])', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


_UNBOUND = object()


class _Parser:
    def __init__(self, toks, ev: TfEvaluator):
        self.t, self.i, self.ev = toks, 0, ev

    def peek(self, value=None):
        if self.i >= len(self.t):
            return None
        tok = self.t[self.i]
        return tok if value is None or tok[1] == value else None

    def take(self, value=None):
        tok = self.peek(value)
        if tok is None:
            raise Unsupported(f"expected {value!r} at {self.t[self.i:]!r}")
        self.i += 1
        return tok

    def skip(self):
        """Parse and discard the next ternary expression (the branch not taken)."""
        depth = 0
        while self.i < len(self.t):
            kind, val = self.t[self.i]
            if val in "([" and kind == "op":
                depth += 1
            elif val in ")]" and kind == "op":
                if depth == 0:
                    return
                depth -= 1
            elif depth == 0 and kind == "op" and val in (":", ","):
                return
            self.i += 1

    def ternary(self):
        cond = self.disjunction()
        if self.peek("?"):
            self.take("?")
            if cond:
                a = self.ternary()
                self.take(":")
                self.skip()
                return a
            self.skip()
            self.take(":")
            return self.ternary()
        return cond

    def disjunction(self):
        v = self.conjunction()
        while self.peek("||"):
            self.take()
            w = self.conjunction()
            v = bool(v) or bool(w)
        return v

    def conjunction(self):
        v = self.negation()
        while self.peek("&&"):
            self.take()
            w = self.negation()
            v = bool(v) and bool(w)
        return v

    def negation(self):
        if self.peek("!"):
            self.take()
            return not self.negation()
        return self.comparison()

    def comparison(self):
        v = self.postfix()
        for op in ("==", "!=", ">", "<", ">=", "<="):
            if self.peek(op):
                self.take()
                w = self.postfix()
                return {"==": v == w, "!=": v != w, ">": v > w, "<": v < w, ">=": v >= w, "<=": v <= w}[op]
        return v

    def postfix(self):
        v = self.primary()
        while self.peek("["):
            self.take("[")
            idx = self.ternary()
            self.take("]")
            v = v[idx]
        return v

    def primary(self):
        kind, val = self.take()
        if kind == "num":
            return int(val)
        if kind == "str":
            return self.ev.template(val[1:-1])
        if val == "(":
            v = self.ternary()
            self.take(")")
            return v
        if val == "{":
            obj = {}
            while not self.peek("}"):
                kkind, key = self.take()
                key = key[1:-1] if kkind == "str" else key
                if self.peek("="):
                    self.take("=")
                else:
                    self.take(":")
                obj[key] = self.ternary()
                if self.peek(","):
                    self.take(",")
            self.take("}")
            return obj
        if val == "[" and self.peek("for"):
            return self.for_expression()
        if val == "[":
            items = []
            while not self.peek("]"):
                items.append(self.ternary())
                if self.peek(","):
                    self.take(",")
            self.take("]")
            return items
        if kind == "id":
            if val in ("true", "false"):
                return val == "true"
            if val == "null":
                return None
            if self.peek("("):
                self.take("(")
                args = []
                while not self.peek(")"):
                    args.append(self.ternary())
                    if self.peek(","):
                        self.take(",")
                self.take(")")
                return self.call(val, args)
            path = [val]
            while True:
                if self.peek("."):
                    self.take(".")
                    path.append(self.take()[1])
                elif self.peek("[") and path[0] not in ("var", "local") and len(path) == 2:
                    self.take("[")
                    path.append(self.ternary())
                    self.take("]")
                else:
                    break
            return self.ev.reference(path)
        raise Unsupported(f"unexpected {val!r}")

    def for_expression(self):
        """[for x in LIST : EXPR] (the `[` taken): the body is parsed again for every element."""
        self.take("for")
        name = self.take()[1]
        self.take("in")
        items = self.ternary()
        self.take(":")
        start, out = self.i, []
        outer = self.ev.scope.get(name, _UNBOUND)
        for item in (sorted(items) if isinstance(items, (set, frozenset)) else items):
            self.i = start
            self.ev.scope[name] = item
            out.append(self.ternary())
        if outer is _UNBOUND:
            self.ev.scope.pop(name, None)
        else:
            self.ev.scope[name] = outer
        if not items:
            self.skip()
        self.take("]")
        return out

    def call(self, fn, args):
        if fn == "replace":
            if args[1].startswith("/"):
                raise Unsupported("replace() with a regular expression")
            return args[0].replace(args[1], args[2])
        if fn == "concat":
            return [x for a in args for x in a]
        if fn == "toset":
            return sorted(set(args[0]))
        if fn == "split":
            return args[1].split(args[0])
        if fn == "length":
            return len(args[0])
        if fn == "join":
            return args[0].join(args[1])
        if fn == "jsonencode":
            return json.dumps(args[0], separators=(",", ":"))
        raise Unsupported(f"function {fn}()")


def tf_policies(module: dict, variables: dict, account: str, region: str) -> dict:
    """role -> {sid: statement} granted by the module for these variable values."""
    ev = TfEvaluator(module, variables, account, region)
    docs = {name: body for (kind, name), body in ev.data.items() if kind == "aws_iam_policy_document"}
    out = {}
    for (rtype, rname), body in ev.resources.items():
        if rtype in ("aws_iam_policy", "aws_iam_role_policy_attachment", "aws_iam_policy_attachment"):
            raise Unsupported(f"{rtype}.{rname}: policies outside the least-privilege list")
        if rtype == "aws_iam_role" and ("managed_policy_arns" in body or "inline_policy" in body):
            raise Unsupported(f"aws_iam_role.{rname}: inline/managed policies outside the list")
        if rtype != "aws_iam_role_policy" or not ev.resource_exists(rtype, rname):
            continue
        role = re.fullmatch(r"\$\{aws_iam_role\.(\w+)(?:\[0\])?\.id\}", body["role"])
        doc = re.fullmatch(r"\$\{data\.aws_iam_policy_document\.(\w+)(?:\[0\])?\.json\}", body["policy"])
        if not role or not doc:
            raise Unsupported(f"aws_iam_role_policy.{rname}: role/policy must reference a role and a policy document")
        statements = out.setdefault(role.group(1), {})
        src = docs[doc.group(1)]
        raw = list(src.get("statement", []))
        for dyn in src.get("dynamic", []):
            for label, d in dyn.items():
                if unquote(label) != "statement":
                    raise Unsupported(f"dynamic {label}")
                for _ in ev.value(d["for_each"]):
                    raw.extend(d["content"])
        for st in raw:
            v = ev.value(st)
            cond = None
            for c in v.get("condition", []):
                cond = cond or {}
                cond.setdefault(c["test"], {})[c["variable"]] = sorted(_as_list(c["values"]))
            n = {
                "sid": v.get("sid"),
                "actions": sorted(v["actions"]),
                "resources": sorted(v["resources"]),
                "condition": cond,
            }
            if v.get("effect", "Allow") != "Allow":
                raise Unsupported("only Allow statements are expected")
            if n["sid"] in statements:
                raise Unsupported(f"{role.group(1)}: duplicate sid {n['sid']}")
            statements[n["sid"]] = n
    return out
