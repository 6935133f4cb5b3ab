"""Evaluate the IAM statements of template.yaml (SAM/CloudFormation) and of the Terraform module for concrete
inputs, so both can be compared with tests/deploy/least_privilege.json.

Both evaluators implement only the subset of the languages the two files use, and fail loudly on anything
else: a construct they do not know is a test failure, never a silent pass.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
MODULE = ROOT / "infra" / "modules" / "msk-hudi-sink"
EXAMPLE = ROOT / "infra" / "examples" / "msk"
LEAST_PRIVILEGE = Path(__file__).resolve().parent / "least_privilege.json"

# python-hcl2 and checkov's fork of it (bc-python-hcl2) both install a module named `hcl2`; python-hcl2 is
# installed into its own directory of .venv-deploy (see the Makefile) and put first on the path here.
_HCL2_DIR = os.environ.get("HUDI_SINK_HCL2_PATH")
if _HCL2_DIR and _HCL2_DIR not in sys.path:
    sys.path.insert(0, _HCL2_DIR)
import hcl2  # noqa: E402


class Unsupported(Exception):
    """A construct the evaluator does not implement."""


# ----------------------------------------------------------------------------------------------- CloudFormation


class _CfnLoader(yaml.SafeLoader):
    pass


def _tag(name):
    def construct(loader, node):
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
            if name == "Fn::GetAtt":
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {name: value}

    return construct


for _short, _full in {
    "Ref": "Ref",
    "GetAtt": "Fn::GetAtt",
    "Sub": "Fn::Sub",
    "If": "Fn::If",
    "Select": "Fn::Select",
    "Split": "Fn::Split",
    "Join": "Fn::Join",
    "Equals": "Fn::Equals",
    "Not": "Fn::Not",
    "And": "Fn::And",
    "Or": "Fn::Or",
    "Condition": "Condition",
    "EachMemberEquals": "Fn::EachMemberEquals",
}.items():
    _CfnLoader.add_constructor("!" + _short, _tag(_full))


def load_template(text: str | None = None) -> dict:
    return yaml.load(TEMPLATE.read_text() if text is None else text, Loader=_CfnLoader)


_NOVALUE = object()

_FOREACH = "Fn::ForEach::"


def _substitute(node, name: str, value: str):
    """A loop's fragment for one value, as the AWS::LanguageExtensions transform makes it: ${name} becomes the
    value, &{name} the value without its non-alphanumeric characters, in keys and strings alike."""
    stripped = re.sub(r"[^A-Za-z0-9]", "", value)

    def text(s):
        return s.replace("${" + name + "}", value).replace("&{" + name + "}", stripped)

    if isinstance(node, str):
        return text(node)
    if isinstance(node, list):
        return [_substitute(x, name, value) for x in node]
    if isinstance(node, dict):
        if node == {"Ref": name}:
            return value
        return {text(k): _substitute(v, name, value) for k, v in node.items()}
    return node


def expand_foreach(section: dict, collection) -> dict:
    """`section` (Resources, Conditions or Outputs) with its Fn::ForEach loops expanded; `collection(node)`
    evaluates a loop's collection to a list of strings."""
    out = {}
    for key, value in section.items():
        if not key.startswith(_FOREACH):
            out[key] = value
            continue
        name, items, fragment = value
        for item in collection(items):
            for k, v in _substitute(fragment, name, str(item)).items():
                if k in out or k in section:
                    raise Unsupported(f"{key}: logical id {k} twice")
                out[k] = v
    return out


class CfnEvaluator:
    """Resolves intrinsic functions of `template` for the parameter values `params` (strings)."""

    def __init__(self, template: dict, params: dict, account: str, region: str, partition: str = "aws"):
        self.params = {}
        for name, spec in template["Parameters"].items():
            if name in params:
                self.params[name] = str(params[name])
            elif "Default" in spec:
                self.params[name] = str(spec["Default"])
            else:
                raise KeyError(f"parameter {name} has no default and no value")
        unknown = set(params) - set(template["Parameters"])
        if unknown:
            raise KeyError(f"unknown parameters {sorted(unknown)}")
        self.pseudo = {
            "AWS::AccountId": account,
            "AWS::Region": region,
            "AWS::Partition": partition,
            "AWS::StackName": "stack",
        }
        self._conditions: dict[str, bool] = {}
        # The template as CloudFormation sees it after AWS::LanguageExtensions: the loops expanded.
        self.t = dict(template)
        for section in ("Resources", "Conditions", "Outputs"):
            if section in template:
                self.t[section] = expand_foreach(template[section], self.eval)

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            self._conditions[name] = bool(self.eval(self.t["Conditions"][name]))
        return self._conditions[name]

    def _ref(self, name: str):
        if name == "AWS::NoValue":
            return _NOVALUE
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.params:
            if self.t["Parameters"][name]["Type"] == "CommaDelimitedList":
                return self.params[name].split(",")
            return self.params[name]
        res = self.t["Resources"].get(name)
        if res is None:
            raise Unsupported(f"Ref {name}")
        if res["Type"] == "AWS::IAM::RolePolicy":
            self._check_exists(name)
            return f"<ref:{name}>"
        if res["Type"] == "AWS::Lambda::EventSourceMapping":
            # Its UUID, named by its topic so that Terraform's mapping of the same topic compares equal.
            self._check_exists(name)
            (topic,) = self.eval(res["Properties"]["Topics"])
            return f"<event-source-mapping:{topic}>"
        self._check_exists(name)
        props = res.get("Properties", {})
        kind = res["Type"]
        if kind == "AWS::SNS::Topic":
            # Ref of a topic is its ARN.
            p, r, a = self.pseudo["AWS::Partition"], self.pseudo["AWS::Region"], self.pseudo["AWS::AccountId"]
            return f"arn:{p}:sns:{r}:{a}:{self.eval(props['TopicName'])}"
        key = {
            "AWS::S3::Bucket": "BucketName",
            "AWS::DynamoDB::Table": "TableName",
            "AWS::Logs::LogGroup": "LogGroupName",
            "AWS::Serverless::Function": "FunctionName",
            "AWS::CloudWatch::Alarm": "AlarmName",
            "AWS::CloudWatch::Dashboard": "DashboardName",
            "AWS::IAM::Role": None,
        }.get(kind, None)
        if key is None:
            return f"<ref:{name}>"
        return self.eval(props[key])

    def _check_exists(self, name: str):
        cond = self.t["Resources"][name].get("Condition")
        if cond and not self.condition(cond):
            raise Unsupported(f"reference to {name}, which does not exist under condition {cond}")

    def _getatt(self, name: str, attr: str):
        res = self.t["Resources"].get(name)
        if res is None:
            raise Unsupported(f"GetAtt {name}.{attr}")
        self._check_exists(name)
        p, r, a = self.pseudo["AWS::Partition"], self.pseudo["AWS::Region"], self.pseudo["AWS::AccountId"]
        kind = res["Type"]
        if attr != "Arn":
            raise Unsupported(f"GetAtt {name}.{attr}")
        if kind == "AWS::S3::Bucket":
            return f"arn:{p}:s3:::{self._ref(name)}"
        if kind == "AWS::DynamoDB::Table":
            return f"arn:{p}:dynamodb:{r}:{a}:table/{self._ref(name)}"
        if kind == "AWS::Logs::LogGroup":
            # CloudFormation's LogGroup Arn attribute ends in ":*".
            return f"arn:{p}:logs:{r}:{a}:log-group:{self._ref(name)}:*"
        if kind == "AWS::Serverless::Function":
            return f"arn:{p}:lambda:{r}:{a}:function:{self._ref(name)}"
        if kind == "AWS::IAM::Role":
            return f"arn:{p}:iam::{a}:role/<{name}>"
        if kind == "AWS::KMS::Key":
            return f"arn:{p}:kms:{r}:{a}:key/<{name}>"
        raise Unsupported(f"GetAtt on {kind}")

    def _sub(self, arg):
        if isinstance(arg, str):
            text, local = arg, {}
        else:
            text, local = arg[0], {k: self.eval(v) for k, v in arg[1].items()}

        def repl(m):
            key = m.group(1)
            if key in local:
                return str(local[key])
            if "." in key:
                res, attr = key.split(".", 1)
                return str(self._getatt(res, attr))
            v = self._ref(key)
            if v is _NOVALUE:
                raise Unsupported("AWS::NoValue in Sub")
            return str(v)

        return re.sub(r"\$\{([^}!]+)\}", repl, text)

    def eval(self, node):
        if isinstance(node, list):
            out = [self.eval(x) for x in node]
            return [x for x in out if x is not _NOVALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            if key == "Ref":
                return self._ref(arg)
            if key == "Fn::GetAtt":
                return self._getatt(*arg)
            if key == "Fn::Sub":
                return self._sub(arg)
            if key == "Fn::If":
                return self.eval(arg[1] if self.condition(arg[0]) else arg[2])
            if key == "Fn::Select":
                return self.eval(arg[1])[int(self.eval(arg[0]))]
            if key == "Fn::Split":
                return str(self.eval(arg[1])).split(arg[0])
            if key == "Fn::Join":
                return arg[0].join(str(x) for x in self.eval(arg[1]))
            if key == "Fn::EachMemberEquals":
                members, value = (self.eval(x) for x in arg)
                return all(str(m) == str(value) for m in members)
            if key == "Fn::Equals":
                a, b = (self.eval(x) for x in arg)
                return str(a) == str(b)
            if key == "Fn::Not":
                return not self.eval(arg[0])
            if key == "Fn::And":
                return all(self.eval(x) for x in arg)
            if key == "Fn::Or":
                return any(self.eval(x) for x in arg)
            if key == "Condition":
                return self.condition(arg)
            if key.startswith("Fn::"):
                raise Unsupported(key)
        out = {}
        for k, v in node.items():
            v = self.eval(v)
            if v is not _NOVALUE:
                out[k] = v
        return out

    def resource_exists(self, name: str) -> bool:
        cond = self.t["Resources"][name].get("Condition")
        return not cond or self.condition(cond)


def _as_list(x):
    return x if isinstance(x, list) else [x]


def normalise_statement(st: dict) -> dict:
    """{sid, actions (sorted), resources (sorted), condition} of an evaluated IAM statement."""
    if st.get("Effect", "Allow") != "Allow":
        raise Unsupported(f"statement {st.get('Sid')}: only Allow statements are expected")
    cond = st.get("Condition")
    if cond:
        cond = {op: {k: sorted(_as_list(v)) for k, v in kv.items()} for op, kv in cond.items()}
    return {
        "sid": st.get("Sid"),
        "actions": sorted(_as_list(st["Action"])),
        "resources": sorted(_as_list(st["Resource"])),
        "condition": cond or None,
    }


SAM_ROLES = {"WriterRole": "writer", "CoordinatorRole": "coordinator", "SchedulerRole": "scheduler"}


def merge_statement(statements: dict, n: dict, where: str):
    """Adds `n` to {sid: statement}. A Sid repeated with the same actions and condition keys (a per-topic policy
    granting its own topic, table and lock key) adds its resources and condition values; anything else twice is
    an error."""
    old = statements.get(n["sid"])
    if old is None:
        statements[n["sid"]] = n
        return
    same_keys = (old["condition"] or {}).keys() == (n["condition"] or {}).keys() and all(
        old["condition"][op].keys() == n["condition"][op].keys() for op in old["condition"] or {})
    if old["actions"] != n["actions"] or not same_keys:
        raise Unsupported(f"{where}: duplicate Sid {n['sid']}")
    cond = None
    if old["condition"]:
        cond = {op: {k: sorted(set(v) | set(n["condition"][op][k])) for k, v in kv.items()}
                for op, kv in old["condition"].items()}
    statements[n["sid"]] = dict(old, resources=sorted(set(old["resources"]) | set(n["resources"])), condition=cond)


def sam_policies(template: dict, params: dict, account: str, region: str) -> dict:
    """role -> {sid: statement} granted by the template for these parameters (the roles that exist)."""
    ev = CfnEvaluator(template, params, account, region)
    out = {}
    resources = ev.t["Resources"]
    roles = {n: r for n, r in resources.items() if r["Type"] == "AWS::IAM::Role"}
    if set(roles) != set(SAM_ROLES):
        raise Unsupported(f"roles in template.yaml: {sorted(roles)}, expected {sorted(SAM_ROLES)}")
    if any(r.get("Properties", {}).get("ManagedPolicyArns") for r in roles.values()):
        raise Unsupported("managed policies are not part of the least-privilege list")
    attached = {}
    for name, res in resources.items():
        if res["Type"] == "AWS::IAM::RolePolicy" and ev.resource_exists(name):
            role = res["Properties"]["RoleName"]
            if not (isinstance(role, dict) and set(role) == {"Ref"} and role["Ref"] in roles):
                raise Unsupported(f"{name}: a role policy must name a role of the template")
            attached.setdefault(role["Ref"], []).append(ev.eval(res["Properties"]))
    for name, role in roles.items():
        if not ev.resource_exists(name):
            if name in attached:
                raise Unsupported(f"policies attached to {name}, which does not exist")
            continue
        statements = {}
        for policy in ev.eval(role["Properties"].get("Policies", [])) + attached.get(name, []):
            for st in _as_list(policy["PolicyDocument"]["Statement"]):
                merge_statement(statements, normalise_statement(st), name)
        out[SAM_ROLES[name]] = statements
    # Functions: no inline SAM policies, roles as declared, the ones a user would expect.
    for fn, role in (("WriterFunction", "WriterRole"), ("CoordinatorFunction", "CoordinatorRole")):
        props = resources[fn]["Properties"]
        if "Policies" in props:
            raise Unsupported(f"{fn} has SAM Policies outside the least-privilege list")
        if props.get("Role") != {"Fn::GetAtt": [role, "Arn"]}:
            raise Unsupported(f"{fn} does not use {role}")
    return out


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


# ----------------------------------------------------------------------------------------------- alarms


def _number(v):
    return float(v) if v is not None else None


def _dims(d) -> dict:
    """{name: value} of CloudFormation's [{Name, Value}] or Terraform's map."""
    if isinstance(d, list):
        return {x["Name"]: x["Value"] for x in d}
    return dict(d or {})


def sam_alarms(template: dict, params: dict, account: str, region: str) -> dict:
    """alarm name -> normalised alarm of template.yaml for these parameters (only the alarms that exist)."""
    ev = CfnEvaluator(template, params, account, region)
    out = {}
    for name, res in ev.t["Resources"].items():
        if res["Type"] != "AWS::CloudWatch::Alarm" or not ev.resource_exists(name):
            continue
        p = ev.eval(res["Properties"])
        queries = []
        for m in p.get("Metrics", []):
            q = {"id": m["Id"], "return_data": bool(m.get("ReturnData", True)),
                 "expression": m.get("Expression"), "label": m.get("Label"), "metric": None}
            if "MetricStat" in m:
                ms = m["MetricStat"]
                q["metric"] = {
                    "namespace": ms["Metric"]["Namespace"],
                    "metric": ms["Metric"]["MetricName"],
                    "dimensions": _dims(ms["Metric"].get("Dimensions")),
                    "period": _number(ms["Period"]),
                    "stat": ms["Stat"],
                }
            queries.append(q)
        out[p["AlarmName"]] = {
            "logical_id": name,
            "description": p.get("AlarmDescription"),
            "namespace": p.get("Namespace"),
            "metric": p.get("MetricName"),
            "dimensions": _dims(p.get("Dimensions")),
            "statistic": p.get("Statistic"),
            "period": _number(p.get("Period")),
            "evaluation_periods": _number(p["EvaluationPeriods"]),
            "threshold": _number(p["Threshold"]),
            "comparison": p["ComparisonOperator"],
            "treat_missing_data": p.get("TreatMissingData"),
            "actions_enabled": p.get("ActionsEnabled", True),
            "alarm_actions": p.get("AlarmActions", []),
            "ok_actions": p.get("OKActions", []),
            "queries": queries,
        }
    return out


def tf_alarms(module: dict, variables: dict, account: str, region: str) -> dict:
    """alarm name -> normalised alarm of the Terraform module for these variables (only those that exist)."""
    ev = TfEvaluator(module, variables, account, region)
    out = {}
    instances = [(rtype, rname, body, key) for (rtype, rname), body in ev.resources.items()
                 if rtype == "aws_cloudwatch_metric_alarm" and ev.resource_exists(rtype, rname)
                 for key in ev.instances(body)]
    for rtype, rname, body, key in instances:
        ev.each = key
        get = lambda key, default=None: ev.value(body[key]) if key in body else default  # noqa: E731
        queries = []
        for q in body.get("metric_query", []):
            v = ev.value(q)
            metric = None
            if v.get("metric"):
                m = v["metric"][0]
                metric = {
                    "namespace": m["namespace"],
                    "metric": m["metric_name"],
                    "dimensions": _dims(m.get("dimensions")),
                    "period": _number(m["period"]),
                    "stat": m["stat"],
                }
            queries.append({"id": v["id"], "return_data": bool(v.get("return_data", False)),
                            "expression": v.get("expression"), "label": v.get("label"), "metric": metric})
        out[get("alarm_name")] = {
            "logical_id": rname,
            "description": get("alarm_description"),
            "namespace": get("namespace"),
            "metric": get("metric_name"),
            "dimensions": _dims(get("dimensions")),
            "statistic": get("statistic"),
            "period": _number(get("period")),
            "evaluation_periods": _number(get("evaluation_periods")),
            "threshold": _number(get("threshold")),
            "comparison": get("comparison_operator"),
            "treat_missing_data": get("treat_missing_data"),
            "actions_enabled": get("actions_enabled", True),
            "alarm_actions": get("alarm_actions", []),
            "ok_actions": get("ok_actions", []),
            "queries": queries,
        }
    ev.each = None
    return out


def alarm_metrics(alarm: dict) -> list[tuple]:
    """(namespace, metric name, dimensions as sorted items) of every metric an alarm reads."""
    if alarm["metric"]:
        return [(alarm["namespace"], alarm["metric"], tuple(sorted(alarm["dimensions"].items())))]
    return [(q["metric"]["namespace"], q["metric"]["metric"], tuple(sorted(q["metric"]["dimensions"].items())))
            for q in alarm["queries"] if q["metric"]]


def sam_dashboard(template: dict, params: dict, account: str, region: str) -> dict:
    ev = CfnEvaluator(template, params, account, region)
    (name,) = [n for n, r in ev.t["Resources"].items() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    p = ev.eval(ev.t["Resources"][name]["Properties"])
    return {"name": p["DashboardName"], "body": json.loads(p["DashboardBody"])}


def tf_dashboard(module: dict, variables: dict, account: str, region: str) -> dict:
    ev = TfEvaluator(module, variables, account, region)
    (body,) = [b for (t, _), b in ev.resources.items() if t == "aws_cloudwatch_dashboard"]
    return {"name": ev.value(body["dashboard_name"]), "body": json.loads(ev.value(body["dashboard_body"]))}


def dashboard_metrics(body: dict) -> list[tuple]:
    """(namespace, metric name, dimensions as sorted items) of every metric line of a dashboard body."""
    out = []
    for widget in body["widgets"]:
        for line in widget.get("properties", {}).get("metrics", []):
            names = [x for x in line if isinstance(x, str)]
            if not names:
                continue  # a metric math expression
            namespace, metric, rest = names[0], names[1], names[2:]
            out.append((namespace, metric, tuple(sorted(zip(rest[0::2], rest[1::2])))))
    return out


METRICS_RS = ROOT / "crates" / "hudi-sink" / "src" / "metrics.rs"


def emf_metrics() -> dict:
    """The namespace, dimension and metric names the sink's EMF lines carry, read from metrics.rs."""
    src = METRICS_RS.read_text()
    namespace = re.search(r'pub const NAMESPACE: &str = "([^"]+)";', src).group(1)
    dimension = re.search(r'pub const DIMENSION: &str = "([^"]+)";', src).group(1)
    code = src.split("#[cfg(test)]")[0]
    names = set(re.findall(r'\(\s*"([A-Za-z]+)",\s*"(?:Count|Bytes|Milliseconds)"', code))
    return {"namespace": namespace, "dimension": dimension, "names": names}


# ----------------------------------------------------------------------------------------------- expected


def expected_policies(values: dict, flags: dict) -> dict:
    """least_privilege.json instantiated with placeholder `values` and the `when` flags of a scenario."""
    spec = json.loads(LEAST_PRIVILEGE.read_text())

    def fill(s):
        """The strings `s` stands for: one per element when it names a list placeholder ({topics})."""
        lists = {m for m in re.findall(r"\{(\w+)\}", s) if isinstance(values[m], list)}
        if len(lists) > 1:
            raise Unsupported(f"{s}: more than one list placeholder")
        items = values[lists.pop()] if lists else [None]
        return [re.sub(r"\{(\w+)\}", lambda m: item if isinstance(values[m.group(1)], list) else values[m.group(1)], s)
                for item in items]

    out = {}
    for role, statements in spec["roles"].items():
        if role in spec.get("role_when", {}) and not flags[spec["role_when"][role]]:
            continue
        out[role] = {}
        for st in statements:
            if "when" in st and not flags[st["when"]]:
                continue
            if st["sid"] in out[role]:
                raise Unsupported(f"least_privilege.json: {role}.{st['sid']} twice under the same flags")
            cond = st.get("condition")
            if cond:
                cond = {op: {k: sorted(y for x in v for y in fill(x)) for k, v in kv.items()} for op, kv in cond.items()}
            out[role][st["sid"]] = {
                "sid": st["sid"],
                "actions": sorted(st["actions"]),
                "resources": sorted(y for r in st["resources"] for y in fill(r)),
                "condition": cond or None,
            }
    return out


def diff(name: str, got: dict, want: dict) -> list[str]:
    problems = []
    for role in sorted(set(got) | set(want)):
        g, w = got.get(role, {}), want.get(role, {})
        for sid in sorted(set(g) | set(w)):
            if g.get(sid) != w.get(sid):
                problems.append(f"{name}: role {role} statement {sid}: got {g.get(sid)} want {w.get(sid)}")
    return problems
