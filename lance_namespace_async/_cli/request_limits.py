"""``lance-ns serve`` options for the main :class:`~..server._request_limits.RequestLimits`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .common import _positive_int

if TYPE_CHECKING:
    from ..server._request_limits import RequestLimits

#: (RequestLimits field, help); each is ``--<field with dashes>``
_OPTIONS = (
    ("max_expression_bytes", "bytes of one filter, predicate or SQL expression (default: 32768)"),
    ("max_expression_depth", "parenthesis/call nesting of one expression (default: 32)"),
    ("max_expression_operators", "binary operators in one expression (default: 256)"),
    (
        "max_expression_amplification",
        "size factor of repeat/lpad/rpad/range ... in one expression (default: 256)",
    ),
    ("max_k", "QueryTable k (default: 10000)"),
    ("max_offset", "QueryTable offset (default: 1000000)"),
    (
        "max_columns",
        "projected columns and aliases of one query, merge key columns (default: 1024)",
    ),
    ("max_answer_bytes", "largest QueryTable answer sent, else code 13 (default: 64 MiB)"),
)


def add_request_limit_options(serve: argparse.ArgumentParser) -> None:
    """The request-limit options of ``serve``, in their own help group."""
    group = serve.add_argument_group(
        "request limits",
        "what one request may ask of the storage engine; more is refused with code 13 "
        "(index build parameters have fixed maxima, see RequestLimits)",
    )
    for name, text in _OPTIONS:
        group.add_argument(
            "--" + name.replace("_", "-"), type=_positive_int, metavar="N", help=text
        )


def request_limits_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> RequestLimits:
    """The RequestLimits the options give (the defaults for those not given)."""
    from .. import errors
    from ..server._request_limits import RequestLimits

    given = {name: getattr(args, name, None) for name, _ in _OPTIONS}
    try:
        return RequestLimits(**{k: v for k, v in given.items() if v is not None})
    except errors.InvalidInputError as exc:
        parser.error(str(exc))
