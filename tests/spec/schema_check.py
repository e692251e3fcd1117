#!/usr/bin/python3
"""schema_check.py: schema/job.schema.json is a valid JSON Schema, every example
job satisfies it, and the syntactically broken specs of the corpus violate it."""
import glob
import json
import os
import sys

import jsonschema

root = os.environ["PUNCH_SOURCE_ROOT"]
schema = json.load(open(os.path.join(root, "schema/job.schema.json")))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
failures = 0
for path in sorted(glob.glob(os.path.join(root, "etc/jobs/*.json"))):
    errors = list(validator.iter_errors(json.load(open(path))))
    if errors:
        print(f"FAIL: {path}: {errors[0].message}")
        failures += 1
# Corpus entries the schema alone can refuse (types, names, ranges, paths).
for name in ["unknown-top-key", "negative-epochs", "zero-batch", "string-lr",
             "unknown-optimizer", "unknown-loss", "unknown-trainer", "dropout-one",
             "unknown-layer", "unknown-layer-key", "escape-dotdot", "escape-absolute",
             "workers-zero", "split-one", "bad-padding"]:
    spec = json.load(open(os.path.join(root, "tests/spec/bad", name + ".json")))
    if validator.is_valid(spec):
        print(f"FAIL: schema accepts broken spec {name}.json")
        failures += 1
print("schema: %d failures" % failures)
sys.exit(1 if failures else 0)
