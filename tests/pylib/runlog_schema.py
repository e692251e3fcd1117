"""runlog_schema.py — checks a run directory's progress.jsonl against
schema/rundir.md, read from the schema itself rather than copied here: the
first JSON block under "## progress.jsonl" gives the fields every trainer's
lines carry, with their JSON types; the second the fields distributed
trainers' lines may add. A line with a missing field, a field of another
type, or a field the schema does not name is a problem.

    problems = runlog_schema.check_run(out_dir)   # [] when it holds

`accuracy` in the schema stands for each of the run's metrics, `val_`
fields are required when the run has a validation set, `test_` ones in the
`end` line when it has a test set (both read from history.json)."""
import json
import os

METRICS = ("accuracy", "mse", "mae")


def _type(v):
    if isinstance(v, bool):
        return "bool"
    return {int: "int", float: "float", str: "str"}.get(type(v), type(v).__name__)


def _kind(line):
    """The schema entry a line belongs to: the event, and an end line's status."""
    ev = line.get("event")
    return (ev, line.get("status")) if ev == "end" else (ev, None)


def _schema_blocks(root):
    with open(os.path.join(root, "schema", "rundir.md")) as f:
        text = f.read()
    section = text.split("## progress.jsonl", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```json\n")[1:]]
    if len(blocks) != 2:
        raise ValueError("schema/rundir.md: expected 2 json blocks under progress.jsonl, got %d"
                         % len(blocks))
    parsed = []
    for b in blocks:
        entries = {}
        for line in b.strip().splitlines():
            obj = json.loads(line)
            entries[_kind(obj)] = {k: _type(v) for k, v in obj.items()}
        parsed.append(entries)
    return parsed


def _expand(fields, metrics):
    """The schema's fields with `accuracy` replaced by each run metric."""
    out = {}
    for k, t in fields.items():
        if "accuracy" in k:
            for m in metrics:
                out[k.replace("accuracy", m)] = t
        else:
            out[k] = t
    return out


def check_run(out, root=None):
    """Problems of out/progress.jsonl against the schema, as strings."""
    root = root or os.environ.get("PUNCH_SOURCE_ROOT") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    required, added = _schema_blocks(root)
    with open(os.path.join(out, "history.json")) as f:
        hist = json.load(f)
    metrics = [m for m in METRICS if m in hist]
    has_val, has_test = "val_loss" in hist, "test" in hist
    distributed = hist.get("trainer") != "single"
    problems = []
    with open(os.path.join(out, "progress.jsonl")) as f:
        lines = [json.loads(s) for s in f if s.strip()]
    if not lines:
        problems.append("progress.jsonl is empty")
    for n, line in enumerate(lines, 1):
        kind = _kind(line)
        if kind not in required:
            problems.append("line %d: event %s is not in the schema" % (n, kind))
            continue
        must = _expand(required[kind], metrics)
        may = _expand(added.get((kind[0], None), {}), metrics) if distributed else {}
        for k, t in must.items():
            if k.startswith("val_") and not has_val:
                continue
            if k.startswith("test_") and kind[0] == "end" and not has_test:
                continue
            if k not in line:
                problems.append("line %d (%s): no %s" % (n, kind[0], k))
        for k, v in line.items():
            t = must.get(k) or may.get(k)
            if t is None:
                problems.append("line %d (%s): %s is not in the schema" % (n, kind[0], k))
            elif _type(v) != t:
                problems.append("line %d (%s): %s is %s, the schema says %s"
                                % (n, kind[0], k, _type(v), t))
        if distributed and kind[0] == "start":
            if "workers" not in line:
                problems.append("line %d (start): a distributed start line without workers" % n)
            if ("resumed_from_epoch" in line) != (line.get("epoch", 0) > 0):
                problems.append("line %d (start): resumed_from_epoch with epoch %s"
                                % (n, line.get("epoch")))
        if kind[0] == "start" and line.get("trainer") != hist.get("trainer"):
            problems.append("line %d (start): trainer %s, history.json says %s"
                            % (n, line.get("trainer"), hist.get("trainer")))
    return problems
