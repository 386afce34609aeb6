"""HTTP caching and compression for answers kept by the service: `ETag` and `304 Not
Modified` on `If-None-Match`, and gzip for large bodies when the client accepts it.

It must not compute, cache or look up answers itself (`service.encoding` does); it only
turns one into a response.
"""

from __future__ import annotations

import gzip
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from memhubd.service.encoding import QueryAnswer, answer_cache

# Below this a body fits a packet or two and compressing it saves nothing worth the time.
GZIP_MIN_BYTES = 1400
# Level 1: JSON of repeated keys compresses about 8x even so, at a fraction of the cost.
GZIP_LEVEL = 1
# A tagged answer may change with any reload: clients may keep it but must revalidate,
# and it is the caller's own view (roles), never a shared one.
CACHE_CONTROL = "private, no-cache"
VARY = "Accept, Accept-Encoding, Authorization"


# The compressed form is another representation, so its tag differs (RFC 9110 8.8.3);
# either one names the same answer for If-None-Match.
GZIP_TAG_SUFFIX = '-gzip"'


def _base_tag(tag: str) -> str:
    return tag[: -len(GZIP_TAG_SUFFIX)] + '"' if tag.endswith(GZIP_TAG_SUFFIX) else tag


def not_modified(request: Request, tag: str) -> Response | None:
    """A 304 when the request's `If-None-Match` names `tag` (or `*`), else None.

    The 304 carries the tag the client sent, that of the form (plain or gzip) it has.
    """
    header = request.headers.get("if-none-match")
    if not header:
        return None
    for part in header.split(","):
        sent = part.strip().removeprefix("W/")  # weak comparison (RFC 9110 13.1.2)
        if sent == "*" or _base_tag(sent) == tag:
            return Response(status_code=304, headers=_validators(tag if sent == "*" else sent))
    return None


def accepts_gzip(request: Request) -> bool:
    for item in request.headers.get("accept-encoding", "").split(","):
        name, _, params = item.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            quality = params.strip().lower().replace(" ", "")
            return quality not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def answer_response(request: Request, answer: QueryAnswer, *, as_text: bool, hub: Any) -> Response:
    """The answer as JSON (or text), gzip-compressed when large and accepted."""
    if as_text:
        body, media_type = answer.text.encode("utf-8"), "text/plain; charset=utf-8"
    else:
        body, media_type = answer.body, "application/json"
    headers = _validators(answer.tag)
    headers["x-memhub-generation"] = str(answer.generation)
    headers["x-memhub-health"] = answer.health
    if len(body) >= GZIP_MIN_BYTES and accepts_gzip(request):
        body = _gzipped(hub, answer, body, as_text)
        headers["content-encoding"] = "gzip"
        headers["etag"] = answer.tag[:-1] + GZIP_TAG_SUFFIX
    return Response(body, media_type=media_type, headers=headers)


def _gzipped(hub: Any, answer: QueryAnswer, body: bytes, as_text: bool) -> bytes:
    if as_text:  # the text form is rarely asked for twice: not kept
        return gzip.compress(body, GZIP_LEVEL, mtime=0)
    if answer.gzipped is None:
        # mtime=0: the same answer compresses to the same bytes every time.
        data = gzip.compress(body, GZIP_LEVEL, mtime=0)
        answer_cache(hub).attach_gzip(answer, data)  # kept only if still cached
        return data
    return answer.gzipped


def _validators(tag: str) -> dict[str, str]:
    return {"etag": tag, "cache-control": CACHE_CONTROL, "vary": VARY}
