"""The SAM/CloudFormation side of tests/deploy: template.yaml loaded with its intrinsic tags and evaluated for
concrete parameters (the subset of the language the template uses), and the IAM statements each role gets."""

from __future__ import annotations

import re

import yaml

from iac_common import TEMPLATE, Unsupported, _as_list

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
