"""Command-line conventions shared by `memhubd` and `memctl`: a parser that suggests the
command you meant and shows help instead of a bare usage error, shell completion
scripts generated from the parser, and a quiet exit when stdout is closed (`| head`).

Standard library only, and nothing here knows any command: both programs pass
their own parser in.
"""

from __future__ import annotations

import argparse
import errno
import io
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence

TYPE_CHECKING = False  # typing itself is not imported: every command would pay for it
if TYPE_CHECKING:
    from typing import Any, NoReturn

SHELLS = ("bash", "zsh", "fish")


# The parser of the innermost command parsed, kept on the namespace while parsing.
_INNERMOST = "_innermost_parser"


class CommandParser(argparse.ArgumentParser):
    """argparse with three kindnesses: "did you mean" for a misspelt command or choice,
    the help of the command when its subcommand is missing, and an unknown option told
    with the usage of the command it was given to (argparse tells it with the
    program's usage, which lists no option of the command).

    Sub-parsers are created with the same class (argparse's default), so every
    level of a command tree behaves alike.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own check, with the closest names added to its message.
        choices = action.choices
        if choices is None or value in choices:
            return
        import difflib  # only a misspelt word pays for it

        names = [str(choice) for choice in choices]
        close = difflib.get_close_matches(str(value), names, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(name) for name in close)}? " if close else ""
        message = f"invalid choice: {value!r} ({hint}choose from {', '.join(names)})"
        raise argparse.ArgumentError(action, message)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if not hasattr(parsed, _INNERMOST):  # a command's parser returns before its parent's
            setattr(parsed, _INNERMOST, self)
        return parsed, extras

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        innermost = getattr(parsed, _INNERMOST, self)
        delattr(parsed, _INNERMOST)
        if extras:
            innermost.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        """argparse's usage error (exit 2), raised as `UsageError` so that a program
        can also give its message in its own form (a JSON error envelope, say)."""
        if _missing_subcommand(self, message):
            # `memctl review` alone: the list of its actions helps more than one line.
            self.print_help(sys.stderr)
            message = "choose one of the commands above"
            self._print_message(f"\n{self.prog}: error: {message}\n", sys.stderr)
        else:
            self.print_usage(sys.stderr)
            self._print_message(f"{self.prog}: error: {message}\n", sys.stderr)
        raise UsageError(message)


class UsageError(SystemExit):
    """A usage error told on stderr; exits 2 as argparse's does. `message` is its reason."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, with the terminal width read through `os`: argparse asks
    `shutil` for it on every `add_argument`, and importing shutil (with bz2, lzma and
    zlib) costs milliseconds that a command which prints no help does not need."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def terminal_columns() -> int:
    """What `shutil.get_terminal_size().columns` says: $COLUMNS, else stdout's width, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _missing_subcommand(parser: argparse.ArgumentParser, message: str) -> bool:
    if not message.startswith("the following arguments are required:"):
        return False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names = {action.metavar, action.dest}
            return any(str(name) in message for name in names if name)
    return False


def run_command_line(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    run: Callable[[argparse.Namespace], int],
) -> int:
    """Parse `argv` (default: the process's arguments) and run the chosen command.

    The program's name alone prints its help and exits 0; a command that needs no
    daemon (`local_handler`, such as `completion`) runs on its own; everything else
    goes to `run`. A reader of stdout that goes away early ends the command quietly.
    """
    arguments = sys.argv[1:] if argv is None else list(argv)
    if not arguments:
        parser.print_help()
        return 0
    args = parser.parse_args(arguments)
    local = getattr(args, "local_handler", None)
    return exit_quietly_on_closed_stdout(
        lambda: int(local(args)) if local else run(args), parser.prog
    )


def exit_quietly_on_closed_stdout(run: Callable[[], int], prog: str) -> int:
    """Run `run()`; when the reader of stdout went away (`memhubd lint ... | head`),
    stop without a traceback and exit 1 (the output was cut short). When stdout cannot
    be written at all (started closed, `>&-`; a full disk, `>/dev/full`), say so in one
    line on stderr and exit 1.

    Flushing here, inside the guard, keeps Python from reporting the failure again at
    interpreter exit; after a failure, stdout is pointed at the null device so that the
    interpreter's own last flush has nowhere to fail.
    """
    if sys.stdout is None:  # started with stdout closed: Python leaves it None
        sys.stdout = ClosedOutput()
    try:
        code = run()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        _drop_stdout()
        return 1
    except OSError as error:
        if not _stdout_failed(error):
            raise
        _drop_stdout()
        _tell(f"{prog}: cannot write output: {error.strerror or error}")
        return 1


class ClosedOutput(io.TextIOBase):
    """Stands for a standard output the process was started without: writing to it
    fails as writing to a closed descriptor does, so that output lost is never taken
    for output given."""

    def writable(self) -> bool:
        return True

    def write(self, text: Any) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    @property
    def buffer(self) -> ClosedOutput:  # binary writers (the MCP bridge) fail alike
        return self


# What a write to a full disk or a dead output gives; a file of the command's own that
# fails so names itself (`filename`), a write to stdout does not.
_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF})


def _stdout_failed(error: OSError) -> bool:
    """Whether `error` came from writing stdout: stdout still cannot take what it holds,
    or the error is a failed write that names no file (a large write that failed left
    nothing behind to flush)."""
    if isinstance(sys.stdout, ClosedOutput):
        return error.errno == errno.EBADF
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return error.errno in _WRITE_ERRORS and error.filename is None


def _drop_stdout() -> None:
    if isinstance(sys.stdout, ClosedOutput):
        return  # descriptor 1 may by now belong to a file or socket this process opened
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # nothing better to do: the exit code already says the output is missing


def _tell(line: str) -> None:
    """One line on stderr, if there is a stderr to take it."""
    if sys.stderr is None:
        return
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        return  # stderr fails too: the exit code is all that is left to say it


# -- shell completion ----------------------------------------------------------------------


class _Level:
    """What can follow one command path: subcommands, options, option values."""

    __slots__ = ("commands", "options", "valued", "choices")

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.options: list[str] = []
        self.valued: list[str] = []  # options that take a value
        self.choices: dict[str, list[str]] = {}  # option -> its choices


def _levels(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, _Level]]:
    level = _Level()
    children: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                level.commands.append(name)
                children.append((name, child))
        elif action.option_strings and action.help != argparse.SUPPRESS:
            level.options.extend(action.option_strings)
            if action.nargs != 0:
                level.valued.extend(action.option_strings)
                if action.choices:
                    for option in action.option_strings:
                        level.choices[option] = [str(choice) for choice in action.choices]
    yield path, level
    for name, child in children:
        yield from _levels(child, f"{path} {name}")


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """A completion script for `parser.prog` in bash, zsh or fish.

    The script holds the whole command tree (commands, options, which options take a
    value, their choices), so completing never runs the program.
    """
    prog = parser.prog
    levels = dict(_levels(parser, prog))
    if shell == "bash":
        return _bash(prog, levels)
    if shell == "zsh":
        # zsh runs bash completion functions through bashcompinit.
        return "autoload -U +X bashcompinit && bashcompinit\n" + _bash(prog, levels)
    if shell == "fish":
        return _fish(prog, levels)
    raise ValueError(f"unknown shell {shell!r} (one of {', '.join(SHELLS)})")


def _function_name(prog: str) -> str:
    return "_" + "".join(char if char.isalnum() else "_" for char in prog)


def _quote(text: str) -> str:
    import shlex  # only `completion` quotes anything: other commands do not load it

    return shlex.quote(text)


def _words(items: list[str]) -> str:
    return _quote(" ".join(items))


def _bash(prog: str, levels: dict[str, _Level]) -> str:
    fn = _function_name(prog)
    table = []
    for path, level in levels.items():
        table.append(
            f"    {_quote(path)}) commands={_words(level.commands)}; "
            f"options={_words(level.options)}; valued={_words(level.valued)} ;;"
        )
    choices = []
    for path, level in levels.items():
        for option, values in level.choices.items():
            choices.append(f"    {_quote(path + '|' + option)}) choices={_words(values)} ;;")
    return f"""# {prog} completion for bash (and zsh through bashcompinit).
# Load it with:  source <({prog} completion bash)
{fn}_level() {{
  commands=""; options=""; valued=""
  case "$1" in
{chr(10).join(table)}
  esac
}}
{fn}_choices() {{
  choices=""
  case "$1" in
{chr(10).join(choices)}
  esac
}}
{fn}() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  local cmdpath={_quote(prog)} word i skip=0 commands options valued choices
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${{COMP_WORDS[i]}}"
    if ((skip)); then skip=0; continue; fi
    {fn}_level "$cmdpath"
    if [[ " $valued " == *" $word "* ]]; then skip=1; continue; fi
    if [[ " $commands " == *" $word "* ]]; then cmdpath="$cmdpath $word"; fi
  done
  {fn}_level "$cmdpath"
  if ((COMP_CWORD > 1)) && [[ " $valued " == *" $prev "* ]]; then
    {fn}_choices "$cmdpath|$prev"
    if [[ -n "$choices" ]]; then
      COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    else
      COMPREPLY=($(compgen -f -- "$cur"))
    fi
  elif [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
  elif [[ -n "$commands" ]]; then
    COMPREPLY=($(compgen -W "$commands" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -F {fn} {prog}
"""


def _fish(prog: str, levels: dict[str, _Level]) -> str:
    fn = _function_name(prog)
    valued_cases = []
    command_cases = []
    for path, level in levels.items():
        if level.valued:
            keys = " ".join(_quote(f"{path}|{option}") for option in level.valued)
            valued_cases.append(f"            case {keys}\n                set skip 1\n")
        if level.commands:
            keys = " ".join(_quote(f"{path}|{name}") for name in level.commands)
            command_cases.append(
                f'            case {keys}\n                set path "$path $word"\n'
            )
    lines = [
        f"# {prog} completion for fish. Load it with:  {prog} completion fish | source",
        f"function {fn}_path",
        f"    set -l path {_quote(prog)}",
        "    set -l skip 0",
        "    for word in (commandline -opc)[2..-1]",
        "        if test $skip = 1",
        "            set skip 0",
        "            continue",
        "        end",
        '        switch "$path|$word"',
        *valued_cases,
        "        end",
        "        if test $skip = 1",
        "            continue",
        "        end",
        '        switch "$path|$word"',
        *command_cases,
        "        end",
        "    end",
        '    echo "$path"',
        "end",
        f"function {fn}_at",
        f'    test "$({fn}_path)" = "$argv[1]"',
        "end",
        f"complete -c {prog} -f",
    ]
    for path, level in levels.items():
        condition = f"\"{fn}_at '{path}'\""  # command paths hold no quotes or `$`
        if level.commands:
            lines.append(f"complete -c {prog} -n {condition} -a {_words(level.commands)}")
        elif path != prog:
            lines.append(f"complete -c {prog} -n {condition} -F")
        for option in level.options:
            flag = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            extra = ""
            if option in level.choices:
                extra = f" -x -a {_words(level.choices[option])}"
            elif option in level.valued:
                extra = " -r"
            lines.append(f"complete -c {prog} -n {condition} {flag}{extra}")
    return "\n".join(lines) + "\n"


def add_completion_command(
    subparsers: argparse._SubParsersAction,
    root: Callable[[], argparse.ArgumentParser],
    **parser_options: Any,
) -> argparse.ArgumentParser:
    """`PROG completion bash|zsh|fish`: print the completion script of `root()`'s parser.

    Sets `local_handler` (it needs no daemon); `root` is called when the command runs,
    so the script covers every command registered by then.
    """
    summary = "print a shell completion script (bash, zsh or fish)"
    parser = subparsers.add_parser(
        "completion", help=summary, description=summary, **parser_options
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete for")
    parser.add_argument(
        "--json",
        action="store_true",
        # Not set when absent: a `--json` given before the command (memctl's) then holds.
        default=argparse.SUPPRESS,
        help='JSON output: {"shell": ..., "script": ...}',
    )

    def run(args: argparse.Namespace) -> int:
        script = completion_script(root(), args.shell)
        if getattr(args, "json", False):
            print(json.dumps({"shell": args.shell, "script": script}, indent=2))
        else:
            print(script, end="")
        return 0

    parser.set_defaults(local_handler=run)
    return parser


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argument type: a whole number from `low` to `high` (no upper bound when None),
    so that a value out of range is a usage error naming the option."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, not {value}")
        return value

    return parse
