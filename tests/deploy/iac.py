"""Evaluate the IAM statements, alarms and dashboards of template.yaml (SAM/CloudFormation, `iac_cfn.py`) and of
the Terraform module (`iac_tf.py`) for concrete inputs, so both can be compared with each other and with
tests/deploy/least_privilege.json.

Both evaluators implement only the subset of the languages the two files use, and fail loudly on anything
else: a construct they do not know is a test failure, never a silent pass.
"""

from __future__ import annotations

import json
import re

from iac_cfn import CfnEvaluator, load_template, sam_policies  # noqa: F401  (the tests reach both sides here)
from iac_common import EXAMPLE, LEAST_PRIVILEGE, MODULE, ROOT, TEMPLATE, Unsupported  # noqa: F401
from iac_tf import TfEvaluator, blocks, hcl2, load_module, tf_policies, unquote  # noqa: F401

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
