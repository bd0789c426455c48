"""`python -m ctxgate.subject module:function`: a Python function as a
ctxgate subject (SPEC §6), without writing the protocol loop.

    ctxgate check --subject 'python -m ctxgate.subject my_pkg.compactor:compact
                             --estimate my_pkg.compactor:estimate'

A function is named `module:function` (imported from sys.path, which holds
the working directory) or `path/to/file.py:function`. `compact(config,
messages)` and `estimate(config, messages)` as in `ctxgate.serve`. Bad
names exit 2 with a message on stderr naming what could not be found, and
so does a function that cannot be called as fn(config, messages).
"""

import argparse
import importlib
import importlib.util
import os
import sys

from .protocol import check_signature, serve


def load(spec):
    """The callable named by `module:function` or `file.py:function`."""
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise LookupError(f"{spec!r}: expected module:function or path/to/file.py:function")
    if where.endswith(".py") or os.sep in where:
        if not os.path.isfile(where):
            raise LookupError(f"{spec!r}: no file {where}")
        name = os.path.splitext(os.path.basename(where))[0]
        module_spec = importlib.util.spec_from_file_location(name, where)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules.setdefault(name, module)
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise LookupError(f"{spec!r}: cannot import {where}: {e}") from e
    target = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise LookupError(f"{spec!r}: {where} has no {attr}")
        target = getattr(target, part)
    if not callable(target):
        raise LookupError(f"{spec!r}: {attr} is not callable")
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ctxgate.subject", description=__doc__.split("\n\n")[0])
    parser.add_argument("compact", metavar="MODULE:FUNCTION", nargs="?",
                        help="compact(config, messages) -> messages")
    parser.add_argument("--estimate", metavar="MODULE:FUNCTION",
                        help="estimate(config, messages) -> {tokens, perMessage}")
    parser.add_argument("--name", help="the name in the hello [default: the compact function's]")
    parser.add_argument("--version", default="0", help="the version in the hello [default: 0]")
    parser.add_argument("--invariants", help="comma-separated SPEC §5 names claimed [default: all]")
    parser.add_argument("--wire-formats", help="comma-separated formats whose body it measures [default: all]")
    parts = parser.add_mutually_exclusive_group()
    parts.add_argument("--text-only", dest="content_parts", action="store_const", const=False,
                       help="it takes text content only: ctxgate sends it no parts or images "
                            "(the hello's \"contentParts\": false)")
    parts.add_argument("--content-parts", dest="content_parts", action="store_const", const=True,
                       help="it takes content parts and images (the hello's \"contentParts\": true) "
                            "[default: the hello does not say, and ctxgate sends them]")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="a folder to import modules from (before the working directory); repeatable")
    args = parser.parse_args(argv)
    if not args.compact and not args.estimate:
        parser.error("give MODULE:FUNCTION for compact, --estimate MODULE:FUNCTION, or both")
    sys.path[:0] = [*args.path, os.getcwd()]
    try:
        compact = load(args.compact) if args.compact else None
        estimate = load(args.estimate) if args.estimate else None
    except LookupError as e:
        print(f"ctxgate.subject: {e}", file=sys.stderr)
        return 2

    def names(text):
        return [n.strip() for n in text.split(",") if n.strip()] if text is not None else None

    try:
        for role, fn in (("compact", compact), ("estimate", estimate)):
            if fn is not None:
                check_signature(fn, role, who="ctxgate.subject")
        serve(compact, estimate, name=args.name or args.compact or args.estimate, version=args.version,
              invariants=names(args.invariants), wire_formats=names(args.wire_formats),
              content_parts=args.content_parts)
    except (TypeError, ValueError) as e:  # refused before any request: a signature, the hello
        print(e if str(e).startswith("ctxgate.subject:") else f"ctxgate.subject: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
