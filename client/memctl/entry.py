"""The `memctl` script's entry point (`memhub_protocol.entry`)."""

from memhub_protocol.entry import run_main


def run() -> None:
    run_main("memctl.cli")
