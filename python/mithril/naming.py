# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The names of a compiled model's terminals (docs/conformance.md, "Names").

A compiled model's own names for its terminals are paths: a nested
parameter is named by the instances above it (`linear_0.weight`,
`block.w`), an unnamed output of the top model by its key (`$4`). The
original Mithril names every key by its origin, the last name given to its
edge (`weight` in a Linear, `w` where a parent connects it as `w`):

- `use_short_namings=True` (its default): the bare origin where only one key
  has it, else `origin_0`, `origin_1`, ... in flattening order (`weight_0`,
  `bias_0`, `weight_1`, ...);
- `use_short_namings=False`: the submodel names from the top joined by `_`,
  then the origin (`linear_weight`, `linear_1_weight`, `block_w`), an unnamed
  submodel named by its class where it is the only unnamed one of its class
  in its parent, else `Class_i`, lowercased.

Names the top model gives keep their names in every form. A compiled model
answers in the form compile chose (paths unless use_short_namings is
given), and takes the names of every form: `evaluate` reads `weight_0` as
`linear_0.weight`, and the dicts it returns look up either (NameDict).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from .errors import KeyNotFoundError


def _unique(name: str, taken: set) -> str:
    # As the original, a generated name that is taken gets a leading '_'.
    while name in taken:
        name = "_" + name
    taken.add(name)
    return name


def short_names(names: Iterable[str], output_origins: Mapping[str, str]) -> dict[str, str]:
    """Path -> the original's short name, for `names` in flattening order."""
    names = list(names)
    result = {n: n for n in names if "." not in n and n not in output_origins}
    taken = set(result)
    others = [n for n in names if n not in result]
    origins = {n: output_origins.get(n) or n.rsplit(".", 1)[-1] for n in others}
    counts = Counter(origins.values())
    index: Counter = Counter()
    for n in others:
        origin = origins[n]
        if counts[origin] == 1 and origin not in taken:
            result[n] = _unique(origin, taken)
        else:
            result[n] = _unique(f"{origin}_{index[origin]}", taken)
            index[origin] += 1
    return result


def long_names(names: Iterable[str], long_paths: Mapping[str, str],
               output_origins: Mapping[str, str]) -> dict[str, str]:
    """Path -> the original's long name (`block_linear_weight`)."""
    names = list(names)
    result = {n: n for n in names if "." not in n and n not in output_origins}
    taken = set(result)
    for n in names:
        if n in result:
            continue
        if "." not in n:
            result[n] = _unique(output_origins[n], taken)
            continue
        prefix, origin = n.rsplit(".", 1)
        prefix += "."
        result[n] = _unique(long_paths.get(prefix, prefix.replace(".", "_")) + origin, taken)
    return result


class NameDict(dict):
    """Terminal values keyed by a compiled model's names, which also answer
    to the names of the other forms: `grads["weight_0"]` where the keys are
    paths, `outputs["output"]` for the output `$4`. Iteration, len and
    equality see only the model's own keys. Each model has its subclass,
    whose `aliases` map the other forms' names to its own (so that making
    one is a plain dict's construction: evaluate returns one per call)."""

    aliases: Mapping[str, str] = {}

    def _target(self, key):
        target = self.aliases.get(key) if isinstance(key, str) else None
        return target if target is not None and dict.__contains__(self, target) else None

    def __missing__(self, key):
        target = self._target(key)
        if target is None:
            raise KeyError(key)
        return dict.__getitem__(self, target)

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or self._target(key) is not None

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        target = self._target(key)
        return default if target is None else dict.__getitem__(self, target)

    def __reduce__(self):
        # Pickled (and deep-copied) as the plain dict it is.
        return (dict, (dict(self),))

    def copy(self):
        return type(self)(self)


class Names:
    """A compiled model's names: `primary` maps each path to the name the
    model answers with; every form's name of a terminal is taken."""

    def __init__(self, paths: Iterable[str], use_short_namings: bool | None = None,
                 long_paths: Mapping[str, str] | None = None,
                 output_origins: Mapping[str, str] | None = None) -> None:
        paths = list(dict.fromkeys(paths))
        origins = dict(output_origins or {})
        short = short_names(paths, origins)
        long = long_names(paths, long_paths or {}, origins)
        if use_short_namings is None:
            primary = {p: p for p in paths}
        else:
            primary = short if use_short_namings else long
        # The other forms' names, where no terminal has them as its own.
        own = set(primary.values())
        aliases: dict[str, str] = {}
        for form in (dict(zip(paths, paths)), short, long):
            for path, name in form.items():
                if name not in own and name not in aliases:
                    aliases[name] = primary[path]
        self._set(use_short_namings, primary, aliases)

    def _set(self, mode: bool | None, primary: dict, aliases: dict) -> None:
        self.mode = mode
        self.primary = primary
        self.aliases = aliases
        self.identity = all(k == v for k, v in primary.items())
        self._path_of = {v: k for k, v in primary.items()}
        self.dict_type = type("NameDict", (NameDict,), {"aliases": aliases})

    def external(self, path: str) -> str:
        """The model's name of the terminal at `path` (an unknown name as is)."""
        return self.primary.get(path, path)

    def path(self, name: str) -> str:
        """The path of the terminal a name of any form names (an unknown name
        as is)."""
        if name in self._path_of:
            return self._path_of[name]
        alias = self.aliases.get(name)
        return self._path_of[alias] if alias is not None else name

    def canonical(self, name: str) -> str:
        """The model's own name for a name of any form."""
        return self.external(self.path(name))

    def inward(self, given: Mapping | None, what: str = "input") -> Mapping:
        """`given` keyed by paths (`given` itself where it is: only read);
        two keys naming one terminal are an error."""
        if not given:
            return {}
        if self.identity and given.keys() <= self.primary.keys():
            return given  # only read
        result = {}
        named = {}
        for key, value in given.items():
            path = self.path(key) if isinstance(key, str) else key
            if path in result:
                raise KeyNotFoundError(f"{what} '{key}' and '{named[path]}' name the same "
                                       f"terminal ('{self.external(path)}')")
            result[path], named[path] = value, key
        return result

    def outward(self, values: Mapping) -> NameDict:
        """`values` (keyed by paths) keyed by the model's names."""
        if self.identity:
            return self.dict_type(values)
        return self.dict_type({self.primary.get(k, k): v for k, v in values.items()})

    def every_name(self, paths: Iterable[str]) -> set[str]:
        """Every form's names of the terminals at `paths`."""
        primaries = {self.external(p) for p in paths}
        return primaries | {a for a, p in self.aliases.items() if p in primaries}

    def outward_list(self, paths: Iterable[str]) -> list[str]:
        return [self.primary.get(p, p) for p in paths]

    def to_json(self) -> dict:
        return {"mode": self.mode, "primary": self.primary, "aliases": self.aliases}

    @classmethod
    def from_json(cls, data: Mapping | None, paths: Iterable[str]) -> "Names":
        if not data:
            return cls(paths)
        names = cls.__new__(cls)
        names._set(data.get("mode"), dict(data["primary"]), dict(data["aliases"]))
        return names
