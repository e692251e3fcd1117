#!/usr/bin/python3
"""schema_check.py: schema/job.schema.json is a valid JSON Schema, every example
job satisfies it, and the syntactically broken specs of the corpus violate it."""
import glob

import jsonschema
import punchtest
from punchtest import check, read_json, source_path

# Corpus entries the schema alone can refuse (types, names, ranges, paths).
SCHEMA_REFUSES = ["unknown-top-key", "negative-epochs", "zero-batch", "string-lr",
                  "unknown-optimizer", "unknown-loss", "unknown-trainer", "dropout-one",
                  "unknown-layer", "unknown-layer-key", "escape-dotdot", "escape-absolute",
                  "workers-zero", "split-one", "bad-padding", "scaling-not-allreduce",
                  "rho-not-elastic", "rate-not-elastic", "conv1d-no-kernel",
                  "conv1d-two-kernels"]


def cases():
    validator = punchtest.case("the schema is a valid JSON Schema", load_schema)
    if validator:
        punchtest.case("every example job satisfies it", examples, validator)
        punchtest.case("the broken specs violate it", broken, validator)


def load_schema():
    schema = read_json(source_path("schema", "job.schema.json"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def examples(validator):
    paths = sorted(glob.glob(source_path("etc", "jobs", "*.json")))
    punchtest.require(paths, "no example jobs in etc/jobs")
    for path in paths:
        errors = list(validator.iter_errors(read_json(path)))
        check(not errors, lambda: "%s: %s" % (path, errors[0].message))


def broken(validator):
    for name in SCHEMA_REFUSES:
        spec = read_json(source_path("tests", "spec", "bad", name + ".json"))
        check(not validator.is_valid(spec), "schema accepts broken spec %s.json" % name)


if __name__ == "__main__":
    punchtest.main(cases)
