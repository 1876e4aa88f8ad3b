"""python -m pytorchlite.profiler plot trace.json -o timeline.png [--memory memory.png]"""

import argparse
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pytorchlite.profiler",
                                description="Draw a profiler trace (needs matplotlib).")
    sub = p.add_subparsers(dest="command", required=True)
    pl = sub.add_parser("plot", help="host-thread/device-stream lanes, and memory over time")
    pl.add_argument("trace", help="a Chrome trace written by export_chrome_trace (.json or .json.gz)")
    pl.add_argument("-o", "--out", default="timeline.png", help="the timeline PNG (default timeline.png)")
    pl.add_argument("--memory", default=None,
                    help="the memory PNG (default: the timeline's name with _memory; written only when the trace "
                         "has memory events)")
    pl.add_argument("--max-depth", type=int, default=4, help="nesting levels drawn per lane (default 4)")
    args = p.parse_args(argv)
    from pytorchlite.profiler import _plot
    try:
        written = _plot.plot(args.trace, args.out, args.memory, max_depth=args.max_depth)
    except (OSError, ValueError, ImportError) as e:
        print(f"python -m pytorchlite.profiler plot: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
