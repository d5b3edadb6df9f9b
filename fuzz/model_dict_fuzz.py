"""Mutation fuzzer for the Mithril model-dict reader (mithril.utils.dict_to_model).

Starts from the model dictionaries in Mithril's directed cases, replaces,
deletes or duplicates random nodes of the JSON tree, and feeds each result to
dict_to_model. Anything but a model or a MithrilError is a finding: the
script prints the input, saves it under fuzz/findings/ and exits non-zero.

    PYTHONPATH=build/python_packages python3 fuzz/model_dict_fuzz.py [--runs N] [--seed S]
"""
import argparse
import copy
import glob
import json
import os
import random
import resource
import sys
import traceback

from mithril.errors import MithrilError
from mithril.utils import dict_to_model

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "..", "test", "mithril-cases", "*.json")

ODD_VALUES = [None, True, 0, -1, 1, 3, 2**63, -2**63, 1e308, float("nan"), "", "input",
              "output", "Model", "Linear", "?", [], [1], [[1, 2]], ["a", "b"], {}, {"key": {}},
              {"key": {"connect": [["m", "x"]]}}, {"name": "Relu"}, [None, None]]


def seeds():
    specs = []
    for path in sorted(glob.glob(CASES)):
        with open(path) as f:
            for case in json.load(f).values():
                if isinstance(case, dict) and "model" in case:
                    specs.append(case["model"])
    return specs


def nodes(tree, path=()):
    """Every (container, key) position in a JSON tree."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield tree, k
            yield from nodes(v)
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield tree, i
            yield from nodes(v)


def mutate(spec, rng, donors):
    spec = copy.deepcopy(spec)
    for _ in range(rng.randint(1, 3)):
        positions = list(nodes(spec))
        if not positions:
            return rng.choice(ODD_VALUES + [spec])
        container, key = rng.choice(positions)
        action = rng.random()
        if action < 0.5:
            container[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif action < 0.7:
            if isinstance(container, dict):
                del container[key]
            else:
                container.pop(key)
        elif action < 0.85:
            donor_positions = list(nodes(rng.choice(donors)))
            if donor_positions:
                dc, dk = rng.choice(donor_positions)
                container[key] = copy.deepcopy(dc[dk])
        elif isinstance(container, dict):
            container[rng.choice(["args", "submodels", "connections", "name", "tuples",
                                  "exposed_keys", "assigned_differentiabilities", "key"])] = \
                copy.deepcopy(container[key])
        else:
            container.append(copy.deepcopy(container[key]))
    return spec


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # An input that makes the reader allocate without bound is a finding too:
    # cap the address space so it shows up as a MemoryError, not the OOM killer.
    limit = 4 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    rng = random.Random(args.seed)
    corpus = seeds()
    built = rejected = 0
    for run in range(args.runs):
        spec = mutate(rng.choice(corpus), rng, corpus)
        try:
            dict_to_model(spec)
            built += 1
        except MithrilError:
            rejected += 1
        except RecursionError:
            rejected += 1  # absurdly deep input; Python's own limit, not a crash
        except Exception:
            os.makedirs(os.path.join(HERE, "findings"), exist_ok=True)
            out = os.path.join(HERE, "findings", f"model_dict_{args.seed}_{run}.json")
            with open(out, "w") as f:
                json.dump(spec, f, indent=1, default=str)
            traceback.print_exc()
            print(f"finding after {run + 1} inputs, saved to {out}", file=sys.stderr)
            return 1
    print(f"model_dict_fuzz: {args.runs} inputs, {built} built, {rejected} rejected with "
          f"MithrilError, 0 findings ({len(corpus)} seed models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
