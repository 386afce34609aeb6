# memhubd in a container. Build from the repository root:
#   docker build -t memhub .
# Run it with deploy/docker-compose.yml (a bind-mounted workspaces directory, a named
# state volume, the first admin token from a secret file), or alone:
#   docker run -p 127.0.0.1:8377:8377 -v "$PWD/deploy/workspaces:/workspaces" \
#     -v memhub-state:/var/lib/memhub \
#     -v "$PWD/deploy/secrets/bootstrap_token:/run/secrets/memhub_bootstrap_token:ro" \
#     -e MEMHUB_BOOTSTRAP_TOKEN_FILE=/run/secrets/memhub_bootstrap_token memhub
# The daemon listens on 0.0.0.0 inside the container and refuses to do so while no
# token exists: give it a bootstrap token (above) or create one first with
#   docker run --rm -v memhub-state:/var/lib/memhub memhub memhubd token create ...

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE CHANGELOG.md ./
COPY protocol ./protocol
COPY daemon ./daemon
COPY client ./client
RUN python -m venv /opt/memhub \
    && /opt/memhub/bin/pip install --no-cache-dir .

FROM python:3.11-slim
# A fixed numeric id, so that volume and bind-mount ownership can be set on the host.
RUN groupadd --system --gid 10001 memhub \
    && useradd --system --uid 10001 --gid memhub --no-create-home \
       --home-dir /var/lib/memhub --shell /usr/sbin/nologin memhub \
    && mkdir -p /var/lib/memhub /workspaces /etc/memhub \
    && chown memhub:memhub /var/lib/memhub /workspaces \
    && chmod 0700 /var/lib/memhub
COPY --from=build /opt/memhub /opt/memhub
COPY deploy/container.toml /etc/memhub/memhub.toml
ENV PATH=/opt/memhub/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MEMHUB_STATE_DIR=/var/lib/memhub
VOLUME ["/workspaces", "/var/lib/memhub"]
EXPOSE 8377
USER 10001:10001
# slim images have no curl: ask the daemon with the standard library.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8377/healthz', timeout=4)"]
STOPSIGNAL SIGTERM
CMD ["memhubd", "serve", "--config", "/etc/memhub/memhub.toml"]
