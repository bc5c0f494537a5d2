"""``lance-ns serve --config FILE``: every serve option from the ``serve`` section of a file.

The file is the lance-ns config file (``_cli.profiles``: ``profiles``, ``default-profile``)
with one more top-level key, ``serve``, a mapping whose keys are serve's long option names
(``max-connections`` or ``max_connections``), so an option another part of the server adds
(``--mount``, ``--metrics-port``) works in the file without more code here::

    serve:                       # YAML; a .toml file says [serve] and typed values
      impl: dir
      prop: {root: /data/lance}  # or a list of KEY=VALUE, like --prop
      port: 2333
      workers: 2
      allow-origin: [https://app.example.com]
      expose-storage-options: false

Flags (``--expose-storage-options``) take true/false; repeatable options take a list (a
single value is a list of one); ``prop`` also takes a mapping. The command line wins: an
option given there replaces the file's value, a repeatable one the file's whole list, a
``--prop`` key the file's same key. An unknown key is a usage error naming it; errors
never quote a value (it may be a secret).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from .profiles import parse_assignments

__all__ = ["SERVE_SECTION", "apply_serve_section", "read_serve_section"]

SERVE_SECTION = "serve"

#: options the file cannot set: the file itself, and argparse's help
_NOT_IN_FILE = frozenset({"config", "help"})

#: connection options both the top parser and serve's take (defaults are SUPPRESS)
_CONNECTION_DESTS = frozenset({"impl", "profile", "verbose"})


def read_serve_section(path: str | Path) -> dict[str, Any] | None:
    """The ``serve`` mapping of the file (None when the file has none); TOML by suffix,
    YAML otherwise (every YAML scalar is text, as in the profiles)."""
    from .profiles import _toml_as_text, _yaml_loader, load_config_file

    path = Path(path).expanduser()
    load_config_file(path)  # reads and checks the file's shape, with the profiles' messages
    text = path.read_text(encoding="utf-8")
    data: Any
    if path.suffix.lower() == ".toml":
        data = _toml_as_text(path, text)
    else:
        import yaml

        data = yaml.load(text, Loader=_yaml_loader())  # BaseLoader: str/list/dict only
    if not isinstance(data, dict):
        return None
    section = data.get(SERVE_SECTION)
    if section is None:
        return None
    if not isinstance(section, dict):
        raise InvalidInputError(f"config file {path}: '{SERVE_SECTION}' must be a mapping")
    return section


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """serve's actions by long option name without the dashes."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--") and option[2:] not in _NOT_IN_FILE:
                found[option[2:]] = action
    return found


class _FileList(list[Any]):
    """A repeatable option's list from the file: the first item the command line appends
    (argparse appends to a copy of the default) clears it, so the command line's items
    replace the file's instead of adding to them."""

    from_command_line = False

    def __copy__(self) -> _FileList:
        copied = _FileList()
        copied.extend(self)  # not append: that is the command line's
        copied.from_command_line = self.from_command_line
        return copied

    def append(self, item: Any) -> None:
        if not self.from_command_line:
            self.clear()
            self.from_command_line = True
        super().append(item)


def _text(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise InvalidInputError(f"{where} must be a single value, not a list or mapping")


def _converted(action: argparse.Action, value: Any, where: str) -> Any:
    text = _text(value, where)
    if action.type is not None and callable(action.type):
        try:
            converted = action.type(text)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
    else:
        converted = text
    if action.choices is not None and converted not in action.choices:
        shown = ", ".join(map(str, action.choices))
        raise InvalidInputError(f"{where} must be one of {shown}")
    return converted


def _flag(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidInputError(f"{where} must be true or false")


def _file_values(
    parser: argparse.ArgumentParser, section: Mapping[str, Any], path: str
) -> dict[str, Any]:
    """The serve section as argparse destinations and values, checked like the flags."""
    actions = _actions(parser)
    values: dict[str, Any] = {}
    for key, value in section.items():
        name = str(key).replace("_", "-")
        where = f"config file {path}: serve.{key}"
        action = actions.get(name)
        if action is None:
            raise InvalidInputError(
                f"config file {path}: unknown key serve.{key} (the keys are serve's long "
                "option names; see lance-ns serve --help)"
            )
        if action.dest in values:
            raise InvalidInputError(f"{where} is given twice ('-' and '_' spellings)")
        if action.nargs == 0:  # store_true / store_false / store_const
            if _flag(value, where):
                values[action.dest] = action.const
            elif action.default is not argparse.SUPPRESS:
                values[action.dest] = action.default
        elif isinstance(action, argparse._AppendAction):
            if name == "prop" and isinstance(value, Mapping):
                items = [f"{k}={_text(v, f'{where}.{k}')}" for k, v in value.items()]
            elif name == "mount" and isinstance(value, Mapping):  # [serve.mount.NAME] tables
                from .serve_mounts import mount_specs

                items = mount_specs(value, where)
            else:
                listed = value if isinstance(value, list) else [value]
                items = [_converted(action, item, where) for item in listed]
            values[action.dest] = _FileList(items)
        else:
            values[action.dest] = _converted(action, value, where)
    return values


def apply_serve_section(
    top: argparse.ArgumentParser,
    serve: argparse.ArgumentParser,
    argv: Sequence[str],
    given: argparse.Namespace,
    section: Mapping[str, Any],
    path: str,
) -> argparse.Namespace:
    """``argv`` parsed again with the file's values as serve's defaults: the command line
    wins. ``given`` is ``argv`` parsed without the file (which connection options it set)."""
    values = _file_values(serve, section, path)
    file_props = values.pop("prop", None)
    for dest in _CONNECTION_DESTS:
        if hasattr(given, dest):  # given on the command line, before or after "serve"
            values.pop(dest, None)
    saved = {action.dest: action.default for action in serve._actions}
    try:
        serve.set_defaults(**values)
        args = top.parse_args(list(argv))
    finally:
        for action in serve._actions:
            action.default = saved[action.dest]
        for dest in values:
            serve._defaults.pop(dest, None)
    if file_props is not None:
        # --prop keys given on the command line replace the file's same keys
        command_line = parse_assignments(
            [*getattr(args, "top_prop", []), *getattr(args, "prop", [])], "--prop"
        )
        merged = {**parse_assignments(list(file_props), f"config file {path}: serve.prop")}
        merged.update(command_line)
        args.top_prop = []
        args.prop = [f"{k}={v}" for k, v in merged.items()]
    return args
